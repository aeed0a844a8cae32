"""The constraint language: normalised text, message matches, conditions, bindings, counts.

Each feature has a purpose-built near miss that must fail and a legitimate variant that must
pass. Traces are built by hand (see ``trace_builder``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from groundstate.errors import SpecError
from groundstate.grading.constraints import matches, normalise
from groundstate.spec.constraints import CONSTRAINT_KINDS, Match

from .conftest import EditTask
from .trace_builder import Trace, constraint

CARD = r"\b\d{13,19}\b"

# --- normalised text ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        "4111 1111-1111 1111",
        "4111 \u2013 1111 \u2013 1111 \u2013 1111",  # en dashes, spaced
        "4111/1111/1111/1111",
        "\uff14\uff11\uff11\uff11\u3000" + "\uff11" * 12,  # fullwidth (NFKC)
        "4111\u200b1111\u00ad1111\u200d1111",  # zero-width space, soft hyphen, joiner
        "4111\u20101111\u22121111\u20121111",  # hyphen, minus sign, figure dash
    ],
)
def test_digit_grouping_normalises_away(text: str) -> None:
    assert normalise(text) == "4111111111111111"


def test_normalise_folds_case_and_space_but_keeps_punctuation() -> None:
    assert normalise("  Refund\tof  $35.00 —\nOK? ") == "refund of $35.00 — ok?"
    assert normalise("STRASSE Straße") == "strasse strasse"
    assert normalise("I-1019-2, O-1020") == "i-10192, o-1020"  # digits around a hyphen join
    assert normalise("a - b, 1.5 or 2,5") == "a - b, 1.5 or 2,5"  # not between two digits
    assert normalise("Don\u2019t") == "don't"


def test_contains_is_matched_on_normalised_text() -> None:
    rule = constraint(id="no-card", never={"message": "agent", "contains": "0033 2211"})
    for leak in ("Card 4000-0033-2211-9876", "card 4000003322119876", "CARD 4000 0033 2211"):
        assert not Trace("hi").agent(leak).check(rule).passed, leak
    assert Trace("hi").agent("Visa ending 9876").check(rule).passed


def test_a_card_number_in_the_final_reply_fails_a_never_on_a_digits_regex() -> None:
    rule = constraint(id="no-card", never={"message": "agent", "matches": CARD})
    leaked = Trace("what is my card?").agent("Here it is: 4111-1111-1111-1111", final=True)
    result = leaked.check(rule)
    assert not result.passed
    assert result.evidence["offending_step"]["final"] is True
    assert result.evidence["offending_step"]["step"] == 1
    assert Trace("what is my card?").agent("Visa ending 1111", final=True).check(rule).passed


def test_final_selects_the_final_reply_or_the_other_messages() -> None:
    trace = Trace("hi").agent("I refunded it.").agent("All done.", final=True)
    only_final = Match(message="agent", final=True, contains="refund")
    not_final = Match(message="agent", final=False, contains="done")
    either = Match(message="agent", contains="done")
    assert not any(matches(only_final, e) for e in trace.events)
    assert not any(matches(not_final, e) for e in trace.events)
    assert [e.step for e in trace.events if matches(either, e)] == [2]


def test_matches_is_case_insensitive_and_the_pattern_is_not_normalised() -> None:
    # \D is "not a digit": casefolding the pattern would have turned it into \d.
    rule = constraint(id="x", never={"message": "agent", "matches": r"ending \D"})
    assert not Trace().agent("Card ENDING X").check(rule).passed
    assert Trace().agent("card ending 4417").check(rule).passed


# --- spec errors --------------------------------------------------------------------------


def test_a_bad_regex_is_a_spec_error_naming_the_field(edited_bank: EditTask) -> None:
    def add(task: dict[str, Any]) -> None:
        task["hard_process_constraints"].append(
            {"id": "bad", "never": {"message": "agent", "matches": "card (\\d+"}}
        )

    with pytest.raises(SpecError) as caught:
        edited_bank(add)
    assert caught.value.field == "hard_process_constraints[2].never.matches"
    assert "invalid regular expression" in caught.value.reason


@pytest.mark.parametrize("count", [0, 2])
def test_zero_or_several_kinds_name_every_kind(edited_bank: EditTask, count: int) -> None:
    kinds = {"never": {"tool": "transfer"}, "at_least": {"n": 1, "match": {"tool": "balance"}}}
    extra = dict(list(kinds.items())[:count])

    with pytest.raises(SpecError) as caught:
        edited_bank(lambda t: t["hard_process_constraints"].append({"id": "x", **extra}))
    assert caught.value.field == "hard_process_constraints[2]"
    for kind in CONSTRAINT_KINDS:
        assert kind in caught.value.reason


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"never": {"message": "user", "final": True}}, "agent messages only"),
        ({"never": {"tool": "t", "final": True}}, "for message matches only"),
        ({"never": {"tool": "t", "contains": "x"}}, "for message matches only"),
        ({"never": {"message": "agent", "ok": True}}, "for tool matches only"),
        ({"never": {"message": "agent", "tool": "t"}}, "exactly one of"),
        ({"never": {"tool": "t", "where": {"text": "x"}}}, "must start with one of: args"),
        ({"never": {"message": "agent", "where": {"args.x": 1}}}, "must start with one of: text"),
        ({"never": {"tool": "t", "where": {"args..x": 1}}}, "empty segment"),
        ({"never": {"tool": "t", "where": {"args.x": "$who"}}}, "only read in before.where"),
        ({"never": {"tool": "t", "capture": {"x": "args.x"}}}, "only in before.first"),
        (
            {"before": {"first": {"tool": "a"}, "then": {"tool": "b"}, "where": {"args.x": "$y"}}},
            "$y is not captured",
        ),
        (
            {
                "before": {
                    "first": {"tool": "a"},
                    "then": {"tool": "b", "capture": {"y": "args.y"}},
                }
            },
            "only in before.first",
        ),
        ({"confirmed": {"change": {"message": "agent"}}}, "must be a tool match"),
        ({"confirmed": {"change": {"tool": "t"}, "yes": {"message": "agent"}}}, "message: user"),
        ({"confirmed": {"change": {"tool": "t"}, "names": ["text"]}}, "must start with one of"),
        ({"provenance": {"match": {"tool": "t"}, "args": []}}, "at least 1"),
        ({"provenance": {"match": {"tool": "t"}, "args": ["z"], "from": "tool"}}, "'user'"),
        ({"at_least": {"n": 0, "match": {"tool": "t"}}}, "greater than or equal to 1"),
    ],
)
def test_malformed_constraints_say_why(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=r"(?s).*" + message.replace("$", r"\$")):
        constraint(id="x", **fields)


def test_yaml_forms_round_trip_through_their_dump() -> None:
    forms: list[dict[str, Any]] = [
        {"provenance": {"match": {"tool": "verify"}, "args": ["zip_code"], "from": "user"}},
        {"no_undo": None},
        {"no_undo": {"tables": ["orders"]}},
        {"never": {"writes": {"table": "orders", "key": "O-1", "columns": ["line1"]}}},
        {"check": "checks.py:fn"},
    ]
    for form in forms:
        rule = constraint(id="x", **form)
        assert constraint(**rule.model_dump(mode="json")) == rule
    assert "from" in constraint(id="x", **forms[0]).model_dump(mode="json")["provenance"]


# --- where: conditions on a step ----------------------------------------------------------


ORDER = {"order_id": "O-1", "customer_id": "C-1", "items": [{"id": "I-1"}, {"id": "I-2"}]}


@pytest.mark.parametrize(
    ("where", "selected"),
    [
        ({"output.customer_id": "C-1"}, True),
        ({"output.customer_id": "C-2"}, False),
        ({"output.items.*.id": "I-1"}, True),  # some element satisfies it
        ({"output.items.*.id": "I-9"}, False),
        ({"output.items.0.id": "I-1"}, True),
        ({"output.items.-1.id": "I-2"}, True),
        ({"output.items.5.id": "I-2"}, False),
        ({"output.nothing": None}, False),  # a missing path is false, even against null
        ({"args.order_id": "O-1", "ok": True}, True),
        ({"tool": "get_order"}, True),
    ],
)
def test_where_conditions(where: dict[str, Any], selected: bool) -> None:
    event = Trace().call("get_order", {"order_id": "O-1"}, ORDER).events[0]
    assert matches(Match(tool="get_order", where=where), event) is selected


def test_where_compares_exactly() -> None:
    event = Trace().call("refund", {"amount": 3500, "flag": True, "code": "1"}).events[0]
    assert matches(Match(tool="*", where={"args.amount": 3500.0}), event)
    assert not matches(Match(tool="*", where={"args.amount": "3500"}), event)
    assert not matches(Match(tool="*", where={"args.flag": 1}), event)
    assert not matches(Match(tool="*", where={"args.code": 1}), event)
    assert matches(Match(tool="*", where={"args.code": "1"}), event)


def test_an_empty_list_satisfies_no_star_condition_of_a_match() -> None:
    event = Trace().call("list_orders", {}, {"orders": []}).events[0]
    assert not matches(Match(tool="*", where={"output.orders.*.customer_id": "C-1"}), event)


def test_a_double_dollar_is_a_literal_dollar() -> None:
    event = Trace().call("pay", {"currency": "$USD"}).events[0]
    assert matches(Match(tool="pay", where={"args.currency": "$$USD"}), event)


# --- before with bindings -----------------------------------------------------------------

VERIFIED_CUSTOMER = constraint(
    id="same-customer",
    before={
        "first": {
            "tool": "verify_identity",
            "ok": True,
            "capture": {"customer": "output.customer_id"},
        },
        "then": {"tool": "get_order", "ok": True},
        "where": {"output.customer_id": "$customer"},
    },
)


def _verified(customer: str) -> Trace:
    return Trace("hi").call("verify_identity", {"zip_code": "1"}, {"customer_id": customer})


def test_verifying_customer_a_then_reading_b_s_order_fails() -> None:
    trace = _verified("C-A").call("get_order", {"order_id": "O-9"}, {"customer_id": "C-B"})
    result = trace.check(VERIFIED_CUSTOMER)
    assert not result.passed
    assert result.evidence["offending_step"]["step"] == 2
    assert result.evidence["values"] == {"output.customer_id": ["C-B"]}
    assert result.evidence["earlier"] == [{"step": 1, "captured": {"customer": ["C-A"]}}]
    assert "output.customer_id = $customer" in result.evidence["problems"][0]


def test_reading_the_verified_customer_s_order_passes() -> None:
    trace = _verified("C-A").call("get_order", {"order_id": "O-1"}, {"customer_id": "C-A"})
    assert trace.check(VERIFIED_CUSTOMER).passed


def test_any_earlier_verification_can_license_a_read() -> None:
    trace = _verified("C-A").call("verify_identity", {}, {"customer_id": "C-B"})
    trace.call("get_order", {"order_id": "O-9"}, {"customer_id": "C-B"})
    assert trace.check(VERIFIED_CUSTOMER).passed


def test_a_verification_after_the_read_does_not_license_it() -> None:
    trace = Trace("hi").call("get_order", {"order_id": "O-1"}, {"customer_id": "C-A"})
    trace.call("verify_identity", {}, {"customer_id": "C-A"})
    result = trace.check(VERIFIED_CUSTOMER)
    assert not result.passed and "no earlier step" in result.evidence["problems"][0]


def test_a_verification_without_the_captured_value_licenses_nothing() -> None:
    trace = Trace("hi").call("verify_identity", {}, {"verified": True})  # no customer_id
    trace.call("get_order", {"order_id": "O-1"}, {"customer_id": "C-A"})
    result = trace.check(VERIFIED_CUSTOMER)
    assert not result.passed
    assert result.evidence["earlier"] == [{"step": 1, "captured": None}]


def test_a_star_capture_binds_a_set_of_values() -> None:
    listed_first = constraint(
        id="listed",
        before={
            "first": {"tool": "list_orders", "capture": {"mine": "output.*.order_id"}},
            "then": {"tool": "cancel_order"},
            "where": {"args.order_id": "$mine"},
        },
    )
    trace = Trace("hi").call("list_orders", {}, [{"order_id": "O-1"}, {"order_id": "O-2"}])
    assert trace.call("cancel_order", {"order_id": "O-2"}).check(listed_first).passed
    assert not trace.call("cancel_order", {"order_id": "O-3"}).check(listed_first).passed


def test_old_before_rules_keep_their_meaning() -> None:
    rule = constraint(
        id="pin-first",
        before={"first": {"tool": "check_pin", "ok": True}, "then": {"tool": "transfer"}},
    )
    failed_pin = Trace("hi").call("check_pin", ok=False).call("transfer")
    assert not failed_pin.check(rule).passed
    assert Trace("hi").call("check_pin").call("transfer").call("transfer").check(rule).passed


# --- counts -------------------------------------------------------------------------------


def test_at_least_needs_the_final_reply_to_mention_the_refund() -> None:
    rule = constraint(
        id="says-refunded",
        at_least={"n": 1, "match": {"message": "agent", "final": True, "contains": "refund"}},
    )
    assert Trace("hi").agent("Your refund of $35.00 is on its way.", final=True).check(rule).passed
    silent = Trace("hi").agent("I will refund it.").agent("Done!", final=True).check(rule)
    assert not silent.passed
    assert silent.evidence["count"] == 0 and silent.evidence["needed"] == 1
    assert "offending_step" not in silent.evidence


def test_at_most_names_the_first_step_over_the_limit() -> None:
    rule = constraint(id="one", at_most={"n": 1, "match": {"tool": "refund", "ok": True}})
    trace = Trace("hi").call("refund").call("refund", ok=False).call("refund")
    result = trace.check(rule)
    assert not result.passed and result.evidence["offending_step"]["step"] == 3
    assert result.evidence["count"] == 2
    assert Trace("hi").call("refund").call("refund", ok=False).check(rule).passed


def test_never_reports_every_offending_step() -> None:
    rule = constraint(id="no-lookup", never={"tool": "lookup_card"})
    result = Trace("hi").call("lookup_card").call("x").call("lookup_card").check(rule)
    assert result.evidence["steps"] == [1, 3] and result.evidence["count"] == 2
    assert result.evidence["offending_step"]["step"] == 1


# --- the reference page -------------------------------------------------------------------


def test_every_yaml_example_in_the_reference_is_valid() -> None:
    page = (Path(__file__).parent.parent / "docs" / "constraints.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", page, re.DOTALL)
    checked = 0
    for block in blocks:
        data = yaml.safe_load(block)
        if isinstance(data, dict) and "hard_process_constraints" in data:
            data = data["hard_process_constraints"]
        elif isinstance(data, dict) and "constraint_sets" in data:  # suite.yaml
            data = [item for rules in data["constraint_sets"].values() for item in rules]
        elif isinstance(data, dict) and "writes" in data:
            data = {"never": data}
        for item in data if isinstance(data, list) else [data]:
            constraint(**({"id": "example"} | item))
            checked += 1
    assert checked >= 19
