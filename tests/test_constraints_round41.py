"""A policy reviewer's near misses of the generic constraint kinds, forty-first round.

- A match's ``where`` through ``*`` held only when *every* element equalled the value: ``never:
  {tool: refund, where: {args.items.*: I-1}}`` let a refund of ``[I-1, I-2]`` through (the
  forbidden item hidden beside another) and failed an honest refund of no item (an empty list
  has no element to differ). A match selects the steps a rule is about: one element is enough,
  an empty list is none. ``before.where`` (every value a licensed call uses) is unchanged.
- A nested object in ``args`` had to equal the call's whole object: ``args: {address:
  {country: KP}}`` missed an address with a city beside it, as one more member would hide any
  forbidden nested value. Members given are now looked for, others may stand beside them.
- Conditions no step can meet loaded silently and made rules vacuous: ``where: {ok: "true"}``,
  ``error_class: permision_denied``, ``role: assistant``, ``tool: 5``, paths below a single
  value (``tool.name``); ``where: {tool: cancle_order}`` named no tool and nothing said so; a
  ``where`` value at a path into ``args`` the tool's schema refuses (``args.amount: "30"``).
  They are refused, naming the file and the field; a misspelt tool's name gets a suggestion.

Each has controls that must keep their verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from groundstate.errors import SpecError
from groundstate.grading.constraints import evaluate_constraints
from groundstate.spec.constraints import HardConstraint

from .conftest import EditTask
from .trace_builder import Trace, constraint


def passes(rule: HardConstraint, trace: Trace) -> bool:
    result = trace.check(rule)
    assert result.error is None
    assert result.passed or result.evidence["problems"]
    return result.passed


# --- 1. a match's condition through a list: some element --------------------------------------

NEVER_I1 = constraint(id="n", never={"tool": "refund", "where": {"args.items.*": "I-1"}})
NEVER_I1_BY_ID = constraint(id="n", never={"tool": "refund", "where": {"args.items.*.id": "I-1"}})


@pytest.mark.parametrize(
    "items",
    [["I-1", "I-2"], ["I-2", "I-1"], ["I-2", "I-3", "I-1"], ["I-1", "I-1"], ["I-1"]],
)
def test_a_forbidden_element_beside_others_is_the_forbidden_call(items: list[str]) -> None:
    assert not passes(NEVER_I1, Trace("hi").call("refund", {"items": items}))


@pytest.mark.parametrize("items", [[], ["I-2"], ["I-2", "I-3"], ["I-10"], ["i-1"]])
def test_controls_a_list_without_the_forbidden_element_passes(items: list[str]) -> None:
    assert passes(NEVER_I1, Trace("hi").call("refund", {"items": items}))


@pytest.mark.parametrize(
    ("items", "forbidden"),
    [
        ([{"id": "I-2"}, {"id": "I-1"}], True),
        ([{"sku": "X"}, {"id": "I-1"}], True),  # an element without the key hides nothing
        ([{"id": "I-1", "qty": 2}], True),
        ([{"sku": "I-1"}], False),
        ([], False),
        ("I-1", False),  # no list: nothing to map over
    ],
)
def test_a_forbidden_element_is_found_by_a_path_below_it(items: Any, forbidden: bool) -> None:
    assert passes(NEVER_I1_BY_ID, Trace("hi").call("refund", {"items": items})) is not forbidden


def test_at_most_counts_calls_with_the_element_among_others() -> None:
    rule = constraint(
        id="x", at_most={"n": 1, "match": {"tool": "refund", "where": {"args.items.*": "I-1"}}}
    )
    twice = Trace("hi").call("refund", {"items": ["I-1"]}).call("refund", {"items": ["I-2", "I-1"]})
    assert not passes(rule, twice)
    result = twice.check(rule)
    assert result.evidence["count"] == 2 and result.evidence["offending_step"]["step"] == 2
    other = Trace("hi").call("refund", {"items": ["I-1"]}).call("refund", {"items": ["I-2"]})
    assert passes(rule, other)


@pytest.mark.parametrize(
    ("recipients", "counted"),
    [
        (["legal", "ceo"], True),
        (["ceo", "legal"], True),
        (["legal"], True),
        ([], False),
        (["ceo"], False),
    ],
)
def test_a_required_call_counts_with_the_element_among_others(
    recipients: list[str], counted: bool
) -> None:
    rule = constraint(
        id="x",
        at_least={"n": 1, "match": {"tool": "notify", "ok": True, "where": {"args.to.*": "legal"}}},
    )
    assert passes(rule, Trace("hi").call("notify", {"to": recipients})) is counted


@pytest.mark.parametrize(
    ("items", "needs_approval"), [(["I-2", "I-1"], True), (["I-2"], False), ([], False)]
)
def test_a_then_with_the_element_among_others_needs_its_first(
    items: list[str], needs_approval: bool
) -> None:
    rule = constraint(
        id="x",
        before={
            "first": {"tool": "approve", "ok": True},
            "then": {"tool": "refund", "where": {"args.items.*": "I-1"}},
        },
    )
    assert passes(rule, Trace("hi").call("refund", {"items": items})) is not needs_approval
    approved = Trace("hi").call("approve").call("refund", {"items": items})
    assert passes(rule, approved)


def test_a_change_with_the_element_among_others_needs_a_confirmation() -> None:
    rule = constraint(
        id="x",
        confirmed={"change": {"tool": "refund", "where": {"args.items.*": "I-1"}}, "names": []},
    )
    silent = Trace("Refund please").call("refund", {"items": ["I-2", "I-1"]})
    assert not passes(rule, silent)
    asked = Trace("Refund please").agent("Shall I refund I-2 and I-1?").user("Yes.")
    assert passes(rule, asked.call("refund", {"items": ["I-2", "I-1"]}))
    assert passes(rule, Trace("Refund please").call("refund", {"items": ["I-2"]}))


def test_a_first_with_the_element_among_others_licenses() -> None:
    rule = constraint(
        id="x",
        before={
            "first": {"tool": "list_open", "ok": True, "where": {"output.*.status": "open"}},
            "then": {"tool": "close"},
        },
    )
    mixed = [{"status": "closed"}, {"status": "open"}]
    assert passes(rule, Trace("hi").call("list_open", {}, mixed).call("close"))
    assert not passes(rule, Trace("hi").call("list_open", {}, []).call("close"))
    closed = [{"status": "closed"}]
    assert not passes(rule, Trace("hi").call("list_open", {}, closed).call("close"))


LISTED_ONLY = constraint(
    id="x",
    before={
        "first": {"tool": "list_orders", "ok": True, "capture": {"listed": "output.*.id"}},
        "then": {"tool": "cancel", "ok": True},
        "where": {"args.ids.*": "$listed"},
    },
)


@pytest.mark.parametrize(
    ("ids", "licensed"),
    [(["O-1"], True), (["O-1", "O-2"], True), (["O-1", "O-9"], False), (["O-9", "O-1"], False)],
)
def test_controls_a_licence_still_covers_every_value_a_call_uses(
    ids: list[str], licensed: bool
) -> None:
    listing = Trace("hi").call("list_orders", {}, [{"id": "O-1"}, {"id": "O-2"}])
    assert passes(LISTED_ONLY, listing.call("cancel", {"ids": ids})) is licensed


# --- 2. a nested object in args: the members given --------------------------------------------

NO_KP = constraint(id="n", never={"tool": "ship", "args": {"address": {"country": "KP"}}})


@pytest.mark.parametrize(
    "address",
    [
        {"country": "KP"},
        {"country": "KP", "city": "Pyongyang"},
        {"city": "Pyongyang", "line2": "", "country": "KP"},
    ],
)
def test_a_forbidden_nested_value_beside_other_members_is_the_forbidden_call(
    address: dict[str, str],
) -> None:
    assert not passes(NO_KP, Trace("hi").call("ship", {"address": address, "fast": True}))


@pytest.mark.parametrize(
    "args",
    [
        {"address": {"country": "KR", "city": "Seoul"}},
        {"address": {"city": "KP"}},
        {"address": "KP"},
        {"address": [{"country": "KP"}]},
        {"country": "KP"},
        {},
    ],
)
def test_controls_another_nested_value_passes(args: dict[str, Any]) -> None:
    assert passes(NO_KP, Trace("hi").call("ship", args))


@pytest.mark.parametrize(
    ("given", "selected"),
    [
        ({"o": {"p": {"q": 1, "r": 2}, "s": 3}}, True),  # two levels deep, members beside
        ({"o": {"p": {"q": 1.0}}}, True),
        ({"o": {"p": {"q": "1"}}}, False),
        ({"o": {"p": {"q": True}}}, False),
        ({"o": {"p": {"r": 1}}}, False),
        ({"o": {"p": None}}, False),
    ],
)
def test_a_deeply_nested_argument_matches_by_value_and_type(
    given: dict[str, Any], selected: bool
) -> None:
    rule = constraint(id="n", never={"tool": "t", "args": {"o": {"p": {"q": 1}}}})
    assert passes(rule, Trace("hi").call("t", given)) is not selected


@pytest.mark.parametrize(
    ("items", "selected"),
    [
        ([{"id": "I-1", "qty": 2}], True),  # an element's members beside the ones given
        ([{"id": "I-1"}], True),
        ([{"id": "I-1"}, {"id": "I-2"}], False),  # a list has the elements given, no more
        ([], False),
        ([{"id": "I-2"}], False),
    ],
)
def test_a_list_in_args_holds_the_elements_given_in_order(items: list[Any], selected: bool) -> None:
    rule = constraint(id="n", never={"tool": "t", "args": {"items": [{"id": "I-1"}]}})
    assert passes(rule, Trace("hi").call("t", {"items": items})) is not selected


def test_an_empty_object_in_args_is_any_object() -> None:
    rule = constraint(id="n", never={"tool": "t", "args": {"o": {}}})
    assert not passes(rule, Trace("hi").call("t", {"o": {"a": 1}}))
    assert passes(rule, Trace("hi").call("t", {"o": [1]}))


# --- 3. an errored forbidden call, an empty trajectory ----------------------------------------


@pytest.mark.parametrize(
    "error_class",
    ["invalid_arguments", "unknown_tool", "permission_denied", "tool_error", "environment_error"],
)
def test_a_forbidden_call_that_failed_counts_unless_ok_is_set(error_class: str) -> None:
    trace = Trace("hi").call("wipe", {"all": True}, ok=False)
    trace.events[-1] = trace.events[-1].model_copy(update={"error_class": error_class})
    assert not passes(constraint(id="n", never={"tool": "wipe"}), trace)
    assert passes(constraint(id="n", never={"tool": "wipe", "ok": True}), trace)
    by_class = constraint(id="n", never={"tool": "*", "where": {"error_class": error_class}})
    assert not passes(by_class, trace)


def test_every_kind_on_an_empty_trajectory() -> None:
    rules = [
        constraint(id="never", never={"tool": "t"}),
        constraint(id="at-most", at_most={"n": 0, "match": {"tool": "t"}}),
        constraint(id="before", before={"first": {"tool": "a"}, "then": {"tool": "t"}}),
        constraint(id="confirmed", confirmed={"change": {"tool": "t"}, "names": []}),
        constraint(id="provenance", provenance={"match": {"tool": "t"}, "args": ["x"]}),
        constraint(id="no-undo", no_undo=None),
        constraint(id="at-least", at_least={"n": 1, "match": {"tool": "t"}}),
    ]
    results = evaluate_constraints(rules, [])
    assert [r.passed for r in results] == [True] * 6 + [False]
    assert results[-1].evidence["count"] == 0 and results[-1].evidence["needed"] == 1


# --- 4. conditions no step can meet: refused as the file loads --------------------------------


@pytest.mark.parametrize(
    "rule",
    [
        {"never": {"tool": "t", "where": {"ok": "true"}}},
        {"never": {"tool": "t", "where": {"ok": 1}}},
        {"never": {"tool": "*", "where": {"error_class": "permision_denied"}}},
        {"never": {"tool": "*", "where": {"error_class": "Tool_Error"}}},
        {"never": {"message": "agent", "where": {"role": "assistant"}}},
        {"never": {"tool": "*", "where": {"tool": 5}}},
        {"never": {"tool": "*", "where": {"tool.name": "t"}}},
        {"never": {"message": "user", "where": {"text.0": "y"}}},
        {"at_least": {"n": 1, "match": {"tool": "t", "where": {"ok.value": True}}}},
        {"before": {"first": {"tool": "a"}, "then": {"tool": "t"}, "where": {"ok": "yes"}}},
        {"confirmed": {"change": {"tool": "t"}, "names": ["tool.name"]}},
        {"never": {"tool": "*", "where": {"tool": None}}},
        {"never": {"tool": "*", "where": {"error": 404}}},
        {"never": {"message": "agent", "where": {"text": True}}},
    ],
)
def test_a_condition_no_step_can_meet_is_refused(rule: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        constraint(id="x", **rule)


@pytest.mark.parametrize(
    "rule",
    [
        {"never": {"tool": "t", "where": {"ok": False}}},
        {"never": {"tool": "*", "where": {"error_class": "permission_denied"}}},
        {"never": {"tool": "*", "where": {"error_class": None}}},
        {"never": {"message": "agent", "where": {"role": "agent"}}},
        {"never": {"message": "agent", "where": {"text": "Done."}}},
        {"never": {"tool": "*", "where": {"tool": "t", "error": None}}},
        {"never": {"tool": "*", "where": {"output.ok.value": True, "args.tool.name": "x"}}},
        {
            "before": {
                "first": {"tool": "a", "capture": {"c": "ok"}},
                "then": {"tool": "t"},
                "where": {"ok": "$c"},
            }
        },
    ],
)
def test_controls_conditions_a_step_can_meet_load(rule: dict[str, Any]) -> None:
    constraint(id="x", **rule)


def _add(rule: dict[str, Any]) -> Any:
    def change(task: dict[str, Any]) -> None:
        task["hard_process_constraints"].append({"id": "new", **rule})

    return change


def test_a_condition_no_step_can_meet_names_file_field_and_values(edited_bank: EditTask) -> None:
    with pytest.raises(SpecError) as error:
        edited_bank(_add({"never": {"tool": "*", "where": {"error_class": "permision_denied"}}}))
    message = str(error.value)
    assert "tasks/transfer.yaml" in message
    assert "hard_process_constraints[2].never" in message
    assert "'permision_denied'" in message and "permission_denied" in message


def test_a_misspelt_tool_in_a_condition_is_refused_naming_file_and_field(
    edited_bank: EditTask,
) -> None:
    with pytest.raises(SpecError) as error:
        edited_bank(_add({"never": {"tool": "*", "where": {"tool": "transfr"}}}))
    message = str(error.value)
    assert "tasks/transfer.yaml" in message
    assert "hard_process_constraints[2].never.where.tool" in message
    assert "'transfr'" in message and "did you mean 'transfer'?" in message


def test_a_misspelt_tool_in_a_before_condition_is_refused(edited_bank: EditTask) -> None:
    rule = {
        "before": {
            "first": {"tool": "check_pin"},
            "then": {"tool": "*"},
            "where": {"tool": "trasnfer"},
        }
    }
    with pytest.raises(SpecError) as error:
        edited_bank(_add(rule))
    assert "hard_process_constraints[2].before.where.tool" in str(error.value)
    assert "did you mean 'transfer'?" in str(error.value)


def test_a_misspelt_tool_name_gets_a_suggestion(edited_bank: EditTask) -> None:
    with pytest.raises(SpecError) as error:
        edited_bank(_add({"never": {"tool": "read_audti"}}))
    assert "hard_process_constraints[2].never.tool" in str(error.value)
    assert "did you mean 'read_audit'?" in str(error.value)


def test_controls_a_tool_of_the_task_in_a_condition_loads(edited_bank: EditTask) -> None:
    suite = edited_bank(_add({"never": {"tool": "*", "where": {"tool": "read_audit"}}}))
    assert [c.id for c in suite.tasks["transfer"].hard_process_constraints][-1] == "new"


# --- 5. a where value the tool's schema refuses ------------------------------------------------


def _errors(root: Path) -> list[str]:
    from groundstate.validation.static import check_suite

    return [str(p) for p in check_suite(root).errors]


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        (
            {"never": {"tool": "transfer", "where": {"args.amount": "30"}}},
            "never.where.args.amount",
        ),
        (
            {"never": {"tool": "transfer", "where": {"args.amount": True}}},
            "never.where.args.amount",
        ),
        ({"never": {"tool": "transfer", "where": {"args.target": 5}}}, "never.where.args.target"),
        (
            {"at_least": {"n": 1, "match": {"tool": "transfer", "where": {"args.amount": 1.5}}}},
            "at_least.match.where.args.amount",
        ),
        (
            {
                "before": {
                    "first": {"tool": "check_pin", "ok": True},
                    "then": {"tool": "transfer"},
                    "where": {"args.amount": "30"},
                }
            },
            "before.where.args.amount",
        ),
    ],
)
def test_a_where_value_the_tool_schema_refuses_is_a_check_error(
    edited_bank: EditTask, rule: dict[str, Any], field: str
) -> None:
    errors = _errors(edited_bank(_add(rule)).root)
    assert len(errors) == 1, errors
    assert "tasks/transfer.yaml" in errors[0]
    assert f"hard_process_constraints[2].{field}" in errors[0]
    assert "schema of tool 'transfer'" in errors[0]


@pytest.mark.parametrize(
    "rule",
    [
        {"never": {"tool": "transfer", "where": {"args.amount": 30}}},
        {"never": {"tool": "transfer", "where": {"args.amount": 30.0, "args.target": "C"}}},
        {"never": {"tool": "*", "where": {"args.amount": "30"}}},  # no one schema to read
        {
            "before": {
                "first": {"tool": "check_pin", "ok": True, "capture": {"a": "args.account"}},
                "then": {"tool": "transfer"},
                "where": {"args.source": "$a"},
            }
        },
    ],
)
def test_controls_a_where_value_the_schema_accepts_checks_clean(
    edited_bank: EditTask, rule: dict[str, Any]
) -> None:
    assert _errors(edited_bank(_add(rule)).root) == []


SHIP_TOOL = '''

from pydantic import BaseModel


class Address(BaseModel):
    line1: str
    city: str
    country: str


class Item(BaseModel):
    id: str
    qty: int


@tool
def ship(ctx: ToolContext, address: Address, items: list[Item]) -> dict[str, Any]:
    """Ship items to an address."""
    return {"shipped": len(items)}
'''


@pytest.fixture
def shipping(edited_bank: EditTask) -> EditTask:
    root = edited_bank(lambda task: None).root
    tools = root / "tools.py"
    tools.write_text(tools.read_text() + SHIP_TOOL)

    def edit(rule: dict[str, Any]) -> Any:
        def change(task: dict[str, Any]) -> None:
            task["available_tools"].append("ship")
            _add(rule)(task)

        return edited_bank(change)

    return edit


@pytest.mark.parametrize(
    "rule",
    [
        {"never": {"tool": "ship", "args": {"address": {"country": "KP"}}}},  # others required
        {"never": {"tool": "ship", "args": {"items": [{"id": "I-1"}]}}},
        {"never": {"tool": "ship", "where": {"args.address.country": "KP"}}},
        {"never": {"tool": "ship", "where": {"args.items.*.id": "I-1"}}},
        {"never": {"tool": "ship", "where": {"args.items.0.qty": 2}}},
    ],
)
def test_controls_part_of_a_nested_argument_checks_clean(
    shipping: EditTask, rule: dict[str, Any]
) -> None:
    assert _errors(shipping(rule).root) == []


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        (
            {"never": {"tool": "ship", "args": {"address": {"country": 5}}}},
            "never.args.address.country",
        ),
        (
            {"never": {"tool": "ship", "where": {"args.address.country": 5}}},
            "never.where.args.address.country",
        ),
        (
            {"never": {"tool": "ship", "where": {"args.items.*.qty": "two"}}},
            "never.where.args.items.*.qty",
        ),
        ({"never": {"tool": "ship", "where": {"args.items.*": "I-1"}}}, "never.where.args.items.*"),
        ({"never": {"tool": "ship", "where": {"args.address": "KP"}}}, "never.where.args.address"),
    ],
)
def test_a_nested_value_the_tool_schema_refuses_is_a_check_error(
    shipping: EditTask, rule: dict[str, Any], field: str
) -> None:
    errors = _errors(shipping(rule).root)
    assert len(errors) == 1, errors
    assert f"hard_process_constraints[2].{field}" in errors[0]
    assert "schema of tool 'ship'" in errors[0]


# --- 6. a pattern with a character normalised text never holds ----------------------------------


@pytest.mark.parametrize(
    ("rule", "field", "char"),
    [
        ({"never": {"message": "agent", "matches": "I\u2019m sorry"}}, "never.matches", "\u2019"),
        ({"never": {"message": "agent", "matches": "stra\u00dfe"}}, "never.matches", "\u00df"),
        ({"never": {"message": "agent", "matches": "100\u00a0USD"}}, "never.matches", "\u00a0"),
        ({"never": {"message": "agent", "matches": "card\tnumber"}}, "never.matches", "\t"),
        ({"never": {"message": "user", "matches": "\uff21BC"}}, "never.matches", "\uff21"),
        (
            {"at_least": {"n": 1, "match": {"message": "agent", "matches": "r\u0435fund"}}},
            "at_least.match.matches",
            "\u0435",  # a Cyrillic e
        ),
        (
            {"confirmed": {"change": {"tool": "transfer"}, "names": [], "asks": "\u200btransfer"}},
            "confirmed.asks",
            "\u200b",
        ),
    ],
)
def test_a_pattern_with_a_character_normalised_text_never_holds_is_a_check_error(
    edited_bank: EditTask, rule: dict[str, Any], field: str, char: str
) -> None:
    errors = _errors(edited_bank(_add(rule)).root)
    assert len(errors) == 1, errors
    assert f"hard_process_constraints[2].{field}" in errors[0]
    assert repr(char) in errors[0] and "normalised text" in errors[0]


@pytest.mark.parametrize(
    "pattern",
    ["i'm sorry", "I'M SORRY", "strasse", "caf\u00e9", "\u0434\u0436", r"\b\d{13,19}\b"],
)
def test_controls_a_pattern_normalised_text_can_hold_checks_clean(
    edited_bank: EditTask, pattern: str
) -> None:
    rule = {"never": {"message": "agent", "matches": pattern}}
    assert _errors(edited_bank(_add(rule)).root) == []


def test_controls_the_default_yes_and_no_check_clean(edited_bank: EditTask) -> None:
    rule = {"confirmed": {"change": {"tool": "transfer"}, "names": ["args.amount"]}}
    assert _errors(edited_bank(_add(rule)).root) == []


@pytest.mark.parametrize(
    ("value", "said"),
    [("Don\u2019t", "Don't"), ("Stra\u00dfe 5", "STRASSE 5"), ("\uff11\uff12\uff13", "123")],
)
def test_a_tau2_value_to_communicate_is_folded_as_the_text_is(value: str, said: str) -> None:
    import re

    from groundstate.grading.constraints import normalise
    from groundstate.tau2.policy import info_pattern

    assert re.search(info_pattern(value), normalise(f"Note: {said}."))


def test_every_refused_argument_of_a_match_is_reported(edited_bank: EditTask) -> None:
    rule = {"never": {"tool": "transfer", "args": {"amount": "30", "target": 5}}}
    errors = _errors(edited_bank(_add(rule)).root)
    assert len(errors) == 2, errors
    assert any("never.args.amount" in e for e in errors)
    assert any("never.args.target" in e for e in errors)
