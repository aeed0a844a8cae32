"""Near misses of the generic constraint kinds, forty-third round.

- A value in ``where`` (or a match's ``args``) was compared with the argument as the agent
  spelt it: ``never: {tool: get_order, where: {args.order_id: O-1020}}`` let ``" o-1020"``
  through although the tool served O-1020 for it. An argument differing only in spelling
  (case, spacing, Unicode forms, a number as text) now names the value when the call's output
  or writes show that value itself; a path written another way (``./a``, ``a//b``) names the
  same file. Honest distinct values (a tool that told ``o-1020`` from ``O-1020``) stay apart.
- Two conditions through the same ``*`` could be met by two elements: ``args.items.*.id: I-1``
  and ``args.items.*.qty: 2`` selected a refund of I-1 (qty 1) beside I-2 (qty 2). One
  element must now meet them together.
- A ``matches`` or ``asks`` pattern asking for spacing normalised text never has (two spaces,
  ``\\n``, a space after ``^``) loaded clean: ``check`` refuses it.

And near misses of every kind against retries, failed calls, parallel calls, extra or absent
arguments, each beside an honest trajectory that must keep passing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groundstate.grading.constraints import evaluate_constraints
from groundstate.spec.constraints import HardConstraint
from groundstate.trace import MessageEvent, TraceEvent

from .conftest import EditTask
from .trace_builder import Trace, constraint, model_response, write


def passes(rule: HardConstraint, trace: Trace) -> bool:
    result = trace.check(rule)
    assert result.error is None
    assert result.passed or result.evidence["problems"]
    return result.passed


# --- 1. an argument spelt otherwise, as the tool took it ---------------------------------------

NEVER_O1020 = constraint(id="n", never={"tool": "get_order", "where": {"args.order_id": "O-1020"}})


@pytest.mark.parametrize(
    "spelt",
    [
        "o-1020",  # case
        " O-1020 ",  # surrounding whitespace
        "O-1020\n",
        "\uff2f-1020",  # a fullwidth O
        "O\u20111020",  # a non-breaking hyphen
        "\u041e-1020",  # a Cyrillic O
        "O-1020\u200b",  # a zero-width space
    ],
)
def test_a_respelt_id_the_tool_served_as_the_record_is_the_forbidden_call(spelt: str) -> None:
    trace = Trace("hi").call("get_order", {"order_id": spelt}, {"order_id": "O-1020", "total": 5})
    assert not passes(NEVER_O1020, trace)


@pytest.mark.parametrize(
    ("output", "ok"),
    [
        ({"order_id": "o-1020", "total": 5}, True),  # the tool told o-1020 from O-1020
        (None, False),  # the tool found no such order: it did nothing
        ({"note": "O-1020 is another order"}, True),  # a text mentioning it is no record
        ({"order_id": "O-1021"}, True),
    ],
)
def test_controls_a_respelt_id_the_tool_did_not_serve_as_the_record_passes(
    output: Any, ok: bool
) -> None:
    trace = Trace("hi").call("get_order", {"order_id": "o-1020"}, output, ok=ok)
    assert passes(NEVER_O1020, trace)


def test_controls_a_near_id_that_is_no_respelling_passes_whatever_the_output_shows() -> None:
    for spelt in ("O-10200", "O-102", "O1020", "0-1020"):
        trace = Trace("hi").call("get_order", {"order_id": spelt}, {"order_id": "O-1020"})
        assert passes(NEVER_O1020, trace), spelt


def test_a_respelt_key_shown_by_the_calls_writes_is_the_forbidden_change() -> None:
    rule = constraint(id="n", never={"tool": "cancel_order", "where": {"args.order_id": "O-1020"}})
    row = write("orders", "O-1020", {"status": "ordered"}, {"status": "cancelled"})
    trace = Trace("hi").call("cancel_order", {"order_id": " o-1020"}, {"ok": True}, writes=[row])
    assert not passes(rule, trace)
    other = write("orders", "O-1021", {"status": "ordered"}, {"status": "cancelled"})
    honest = Trace("hi").call("cancel_order", {"order_id": "O-1021"}, {"ok": True}, writes=[other])
    assert passes(rule, honest)


def test_an_email_in_another_case_and_spacing_in_a_matchs_args_is_selected() -> None:
    rule = constraint(id="n", never={"tool": "verify", "args": {"email": "maya@example.com"}})
    trace = Trace("hi").call(
        "verify", {"email": " Maya@Example.COM "}, {"customer": {"email": "maya@example.com"}}
    )
    assert not passes(rule, trace)
    assert passes(rule, Trace("hi").call("verify", {"email": " Maya@Example.COM "}, {"ok": 1}))


@pytest.mark.parametrize(("qty", "shown"), [("2", 2), (" 2 ", 2), ("2.0", 2), ("2", 2.0)])
def test_a_number_written_as_text_the_tool_took_as_the_number_is_selected(
    qty: str, shown: float
) -> None:
    rule = constraint(id="n", never={"tool": "set_qty", "where": {"args.qty": 2}})
    assert not passes(rule, Trace("hi").call("set_qty", {"qty": qty}, {"qty": shown}))


@pytest.mark.parametrize(("qty", "shown"), [("2", "2"), ("two", 2), ("2", 3), ("1e999", 2)])
def test_controls_a_number_as_text_the_tool_did_not_take_as_the_number_passes(
    qty: str, shown: Any
) -> None:
    rule = constraint(id="n", never={"tool": "set_qty", "where": {"args.qty": 2}})
    assert passes(rule, Trace("hi").call("set_qty", {"qty": qty}, {"qty": shown}))


def test_a_float_and_an_int_of_one_value_are_the_same_argument() -> None:
    rule = constraint(id="n", never={"tool": "set_qty", "args": {"qty": 1}})
    assert not passes(rule, Trace("hi").call("set_qty", {"qty": 1.0}))
    assert passes(rule, Trace("hi").call("set_qty", {"qty": 1.5}))


def test_true_and_the_text_true_stay_apart() -> None:
    rule = constraint(id="n", never={"tool": "flag", "where": {"args.on": True}})
    assert passes(rule, Trace("hi").call("flag", {"on": "true"}, {"on": True}))


@pytest.mark.parametrize(
    ("path", "forbidden"),
    [
        ("tests/hidden/secret.py", True),
        ("./tests/hidden/secret.py", True),
        ("tests//hidden/secret.py", True),
        ("tests/./hidden/secret.py", True),
        ("tests/hidden/secret.py/", True),
        ("tests/hidden/secret.py.bak", False),
        ("Tests/hidden/secret.py", False),  # another file on a case-sensitive file system
        ("/tests/hidden/secret.py", False),  # absolute: another path (refused anyway)
        ("tests/hidden", False),
    ],
)
def test_a_path_written_another_way_names_the_same_file(path: str, forbidden: bool) -> None:
    rule = constraint(
        id="n", never={"tool": "read_file", "where": {"args.path": "tests/hidden/secret.py"}}
    )
    trace = Trace("hi").call("read_file", {"path": path}, {"path": path, "content": "x"})
    assert passes(rule, trace) is not forbidden


def test_a_respelt_element_of_a_list_argument_is_selected() -> None:
    rule = constraint(id="n", never={"tool": "refund", "where": {"args.items.*.id": "I-1"}})
    trace = Trace("hi").call("refund", {"items": [{"id": "i-1 "}]}, {"refunded": ["I-1"]})
    assert not passes(rule, trace)


def test_a_condition_on_the_output_compares_the_tools_own_report_exactly() -> None:
    rule = constraint(id="n", never={"tool": "get_order", "where": {"output.status": "Cancelled"}})
    assert passes(rule, Trace("hi").call("get_order", {}, {"status": "cancelled"}))


def test_at_least_counts_an_honest_call_spelt_otherwise_that_the_tool_served() -> None:
    rule = constraint(
        id="a",
        at_least={"n": 1, "match": {"tool": "get_order", "where": {"args.order_id": "O-1020"}}},
    )
    trace = Trace("hi").call("get_order", {"order_id": "o-1020"}, {"order_id": "O-1020"})
    assert passes(rule, trace)
    assert not passes(rule, Trace("hi").call("get_order", {"order_id": "o-1020"}, None, ok=False))


LISTED_FIRST = constraint(
    id="b",
    before={
        "first": {"tool": "list_orders", "ok": True, "capture": {"listed": "output.*.order_id"}},
        "then": {"tool": "get_order"},
        "where": {"args.order_id": "$listed"},
    },
)


def test_before_licenses_a_respelt_listed_id_the_tool_served_as_that_order() -> None:
    trace = Trace("hi").call("list_orders", {}, [{"order_id": "O-1020"}])
    trace.call("get_order", {"order_id": " o-1020"}, {"order_id": "O-1020"})
    assert passes(LISTED_FIRST, trace)


def test_controls_before_refuses_a_respelt_id_the_tool_served_as_another_order() -> None:
    trace = Trace("hi").call("list_orders", {}, [{"order_id": "O-1020"}])
    trace.call("get_order", {"order_id": "o-1020"}, {"order_id": "o-1020"})
    assert not passes(LISTED_FIRST, trace)
    unlisted = Trace("hi").call("list_orders", {}, [{"order_id": "O-1020"}])
    unlisted.call("get_order", {"order_id": "O-1021"}, {"order_id": "O-1021"})
    assert not passes(LISTED_FIRST, unlisted)


def test_a_before_literal_condition_holds_for_a_respelling_the_tool_served() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {"tool": "verify", "ok": True},
            "then": {"tool": "get_order"},
            "where": {"args.order_id": "O-1"},
        },
    )
    trace = Trace("hi").call("verify", {}, {"ok": True})
    assert passes(rule, trace.call("get_order", {"order_id": "o-1"}, {"order_id": "O-1"}))
    assert not passes(rule, Trace("hi").call("verify").call("get_order", {"order_id": "O-2"}))


# --- 2. two conditions through one `*`: one element ----------------------------------------------

NEVER_I1_TWICE = constraint(
    id="n",
    never={"tool": "refund", "where": {"args.items.*.id": "I-1", "args.items.*.qty": 2}},
)


@pytest.mark.parametrize(
    ("items", "forbidden"),
    [
        ([{"id": "I-1", "qty": 1}, {"id": "I-2", "qty": 2}], False),  # two elements between them
        ([{"id": "I-2", "qty": 2}, {"id": "I-1", "qty": 1}], False),
        ([{"id": "I-1", "qty": 2}], True),
        ([{"id": "I-2", "qty": 1}, {"id": "I-1", "qty": 2}], True),
        ([{"id": "I-1"}, {"qty": 2}], False),  # each element misses one
        ([{"id": "I-1"}, {"id": "I-1", "qty": 2}], True),  # one without the key is passed over
        ([], False),
    ],
)
def test_two_conditions_through_one_star_are_met_by_one_element(
    items: list[dict[str, Any]], forbidden: bool
) -> None:
    assert passes(NEVER_I1_TWICE, Trace("hi").call("refund", {"items": items})) is not forbidden


def test_nested_stars_tie_the_outer_element_and_leave_the_inner_free() -> None:
    rule = constraint(
        id="n",
        never={
            "tool": "ship",
            "where": {"args.orders.*.items.*": "I-1", "args.orders.*.status": "open"},
        },
    )
    apart = {"orders": [{"status": "open", "items": ["I-2"]}, {"status": "held", "items": ["I-1"]}]}
    together = {
        "orders": [{"status": "held", "items": []}, {"status": "open", "items": ["I-2", "I-1"]}]
    }
    assert passes(rule, Trace("hi").call("ship", apart))
    assert not passes(rule, Trace("hi").call("ship", together))


def test_stars_over_different_lists_are_met_apart() -> None:
    rule = constraint(
        id="n", never={"tool": "t", "where": {"args.items.*": "I-1", "args.gifts.*": "G-1"}}
    )
    assert not passes(rule, Trace("hi").call("t", {"items": ["I-2", "I-1"], "gifts": ["G-1"]}))
    assert passes(rule, Trace("hi").call("t", {"items": ["I-1"], "gifts": ["G-2"]}))


def test_an_index_and_a_star_into_one_list_are_met_apart() -> None:
    rule = constraint(
        id="n", never={"tool": "t", "where": {"args.items.0.id": "I-1", "args.items.*.qty": 2}}
    )
    items = [{"id": "I-1", "qty": 1}, {"id": "I-2", "qty": 2}]
    assert not passes(rule, Trace("hi").call("t", {"items": items}))


def test_at_most_counts_only_calls_with_one_element_meeting_both() -> None:
    rule = constraint(
        id="m",
        at_most={
            "n": 1,
            "match": {"tool": "refund", "where": {"args.items.*.id": "I-1", "args.items.*.qty": 2}},
        },
    )
    split = {"items": [{"id": "I-1", "qty": 1}, {"id": "I-2", "qty": 2}]}
    whole = {"items": [{"id": "I-1", "qty": 2}]}
    assert passes(rule, Trace("hi").call("refund", whole).call("refund", split))
    assert not passes(rule, Trace("hi").call("refund", whole).call("refund", whole))


def test_a_before_first_must_meet_its_star_conditions_with_one_element() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {
                "tool": "list",
                "where": {"output.*.id": "C-1", "output.*.verified": True},
            },
            "then": {"tool": "refund"},
        },
    )
    apart = Trace("hi").call(
        "list", {}, [{"id": "C-1", "verified": False}, {"id": "C-2", "verified": True}]
    )
    assert not passes(rule, apart.call("refund"))
    together = Trace("hi").call(
        "list", {}, [{"id": "C-2", "verified": False}, {"id": "C-1", "verified": True}]
    )
    assert passes(rule, together.call("refund"))


def test_before_where_still_needs_every_element_to_meet_every_condition() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {"tool": "verify", "ok": True},
            "then": {"tool": "refund"},
            "where": {"args.items.*.order": "O-1", "args.items.*.kind": "refund"},
        },
    )
    good = {"items": [{"order": "O-1", "kind": "refund"}, {"order": "O-1", "kind": "refund"}]}
    bad = {"items": [{"order": "O-1", "kind": "refund"}, {"order": "O-2", "kind": "refund"}]}
    assert passes(rule, Trace("hi").call("verify").call("refund", good))
    assert not passes(rule, Trace("hi").call("verify").call("refund", bad))


def test_a_confirmed_change_selects_only_the_element_meeting_both_conditions() -> None:
    rule = constraint(
        id="c",
        confirmed={
            "change": {
                "tool": "refund",
                "where": {"args.items.*.id": "I-1", "args.items.*.qty": 2},
            },
            "names": ["args.items"],
        },
    )
    split = {"items": [{"id": "I-1", "qty": 1}, {"id": "I-2", "qty": 2}]}
    assert passes(rule, Trace("hi").call("refund", split))  # not a change the rule is about
    assert not passes(rule, Trace("hi").call("refund", {"items": [{"id": "I-1", "qty": 2}]}))


# --- 3. a pattern asking for spacing normalised text never has ----------------------------------


def _add(rule: dict[str, Any]) -> Any:
    def change(task: dict[str, Any]) -> None:
        task["hard_process_constraints"].append({"id": "new", **rule})

    return change


def _errors(root: Path) -> list[str]:
    from groundstate.validation.static import check_suite

    return [str(p) for p in check_suite(root).errors]


@pytest.mark.parametrize(
    "pattern",
    [
        "refund  issued",
        r"refund\s\sissued",
        "refund {2}issued",
        r"refund \s+issued",
        r"refund\ \ issued",
        r"refund\nissued",
        r"refund\tissued",
        r"refund\x09issued",
        r"refund[\n\r]issued",
        "^ refund",
        "refund $",
        r"refund\x20\x20issued",
    ],
)
def test_a_pattern_asking_for_spacing_normalised_text_never_has_is_a_check_error(
    edited_bank: EditTask, pattern: str
) -> None:
    errors = _errors(edited_bank(_add({"never": {"message": "agent", "matches": pattern}})).root)
    assert len(errors) == 1, errors
    assert "hard_process_constraints[2].never.matches" in errors[0]
    assert "normalised text" in errors[0]


def test_an_asks_pattern_with_two_spaces_is_a_check_error(edited_bank: EditTask) -> None:
    rule = {"confirmed": {"change": {"tool": "transfer"}, "names": [], "asks": "move  money"}}
    errors = _errors(edited_bank(_add(rule)).root)
    assert len(errors) == 1 and "confirmed.asks" in errors[0], errors


@pytest.mark.parametrize(
    "pattern",
    [
        "refund issued",
        r"refund\s+issued",
        r"refund\s*issued",
        "refund {1,2}issued",
        r"refund \s?issued",
        r"refund[ \t]+issued",
        r"refund\n?issued",
        "(?x) refund  \\s issued",  # verbose: its spaces are not literal
        r"^\s*refund",
        r"refund\s*$",
        "refund | issued",
        r"\b \b",
        "[^ ]  ?x",
    ],
)
def test_controls_a_pattern_normalised_text_can_hold_checks_clean(
    edited_bank: EditTask, pattern: str
) -> None:
    assert (
        _errors(edited_bank(_add({"never": {"message": "agent", "matches": pattern}})).root) == []
    )


def test_every_pattern_refused_for_its_spacing_indeed_never_matches_normalised_text() -> None:
    import re

    from groundstate.grading.constraints import normalise
    from groundstate.validation.pattern_spacing import spacing_problem

    texts = ["refund  issued", "refund\tissued", "refund\n issued", " refund ", "a  b\n"]
    for pattern in ("refund  issued", r"refund\s\sissued", r"refund\nissued", "^ refund"):
        assert spacing_problem(pattern) is not None
        assert not any(re.search(pattern, normalise(t), re.I) for t in texts)


# --- 4. near misses of every kind: retries, failures, parallel calls, arguments -----------------

ONE_REFUND = constraint(id="m", at_most={"n": 1, "match": {"tool": "refund", "ok": True}})


def test_at_most_of_successes_passes_a_retry_after_a_failed_call() -> None:
    trace = Trace("hi").call("refund", {"id": "I-1"}, ok=False).call("refund", {"id": "I-1"}, {})
    assert passes(ONE_REFUND, trace)
    assert not passes(ONE_REFUND, trace.call("refund", {"id": "I-1"}, {}))


def test_at_most_without_ok_counts_the_failed_attempts_too() -> None:
    rule = constraint(id="m", at_most={"n": 1, "match": {"tool": "refund"}})
    trace = Trace("hi").call("refund", ok=False).call("refund", {"id": "I-1"}, {})
    assert not passes(rule, trace)


VERIFIED_FIRST = constraint(
    id="b",
    before={"first": {"tool": "verify", "ok": True}, "then": {"tool": "refund"}},
)


def test_before_is_not_met_by_a_failed_verification_retried_after_the_change() -> None:
    trace = Trace("hi").call("verify", ok=False).call("refund", {}).call("verify", {}, {})
    assert not passes(VERIFIED_FIRST, trace)
    honest = Trace("hi").call("verify", ok=False).call("verify", {}, {}).call("refund", {})
    assert passes(VERIFIED_FIRST, honest)


def test_before_is_not_met_by_a_verification_asked_for_in_the_same_response() -> None:
    trace = Trace("hi")
    verify = Trace().call("verify", {"pin": "1"}, {}).events[0]
    refund = Trace().call("refund", {"id": "I-1"}, {}).events[0]
    events: list[TraceEvent] = [*trace.events, model_response(verify, refund)]
    events += [verify.model_copy(update={"step": 1}), refund.model_copy(update={"step": 2})]
    result = evaluate_constraints([VERIFIED_FIRST], events)[0]
    assert not result.passed and result.evidence.get("unheard_firsts") == 1
    apart = [*trace.events, model_response(verify), verify.model_copy(update={"step": 1})]
    apart += [model_response(refund), refund.model_copy(update={"step": 2})]
    assert evaluate_constraints([VERIFIED_FIRST], apart)[0].passed


@pytest.mark.parametrize(
    ("args", "selected"),
    [
        ({"order_id": "O-1", "note": "extra"}, True),  # an extra argument hides nothing
        ({"note": "O-1"}, False),  # absent
        ({"order_id": None}, False),  # null is no value
        ({"order_id": ["O-1"]}, False),  # a list holding it is not it
    ],
)
def test_a_matchs_args_with_extra_absent_or_null_arguments(
    args: dict[str, Any], selected: bool
) -> None:
    rule = constraint(id="n", never={"tool": "cancel", "args": {"order_id": "O-1"}})
    assert passes(rule, Trace("hi").call("cancel", args)) is not selected


def test_a_never_on_a_refused_call_counts_it_and_one_with_ok_true_does_not() -> None:
    anyhow = constraint(id="n", never={"tool": "lookup_card"})
    succeeded = constraint(id="n", never={"tool": "lookup_card", "ok": True})
    trace = Trace("hi").call("lookup_card", {"id": "P-1"}, ok=False)
    assert not passes(anyhow, trace)
    assert passes(succeeded, trace)


def test_at_least_fails_when_the_only_required_call_failed() -> None:
    rule = constraint(id="a", at_least={"n": 1, "match": {"tool": "notify", "ok": True}})
    assert not passes(rule, Trace("hi").call("notify", ok=False))
    assert passes(rule, Trace("hi").call("notify", ok=False).call("notify", {}, {}))


def test_no_undo_catches_a_value_set_back_across_calls_but_not_one_changed_onward() -> None:
    rule = constraint(id="u", no_undo={"tables": ["orders"]})
    there = write("orders", "O-1", {"status": "ordered"}, {"status": "cancelled"})
    back = write("orders", "O-1", {"status": "cancelled"}, {"status": "ordered"})
    onward = write("orders", "O-1", {"status": "cancelled"}, {"status": "archived"})
    assert not passes(rule, Trace("hi").call("a", writes=[there]).call("b", writes=[back]))
    assert passes(rule, Trace("hi").call("a", writes=[there]).call("b", writes=[onward]))


def test_provenance_of_a_respelt_argument_still_needs_the_user_to_have_said_it() -> None:
    rule = constraint(
        id="p",
        provenance={"match": {"tool": "update_address"}, "args": ["zip"]},
    )
    said = Trace("My zip is 60606.").call("update_address", {"zip": "60606"}, {})
    assert passes(rule, said)
    assert not passes(rule, Trace("Change my address").call("update_address", {"zip": "60606"}))


def test_a_message_match_is_unaffected_by_argument_spelling() -> None:
    rule = constraint(id="n", never={"message": "agent", "contains": "O-1020"})
    trace = Trace("hi").agent("Your order o-1020 is on its way")
    assert not passes(rule, trace)
    assert isinstance(trace.events[-1], MessageEvent)


def test_a_then_spelt_otherwise_without_its_first_is_still_a_then() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {"tool": "verify", "ok": True},
            "then": {"tool": "refund", "where": {"args.order_id": "O-1"}},
        },
    )
    trace = Trace("hi").call("refund", {"order_id": " o-1"}, {"refunded": "O-1"})
    assert not passes(rule, trace)
    assert passes(rule, Trace("hi").call("refund", {"order_id": " o-1"}, {"refunded": "o-1"}))


def test_at_most_counts_a_record_reached_by_two_spellings_twice() -> None:
    rule = constraint(
        id="m",
        at_most={"n": 1, "match": {"tool": "refund", "where": {"args.order_id": "O-1"}}},
    )
    trace = Trace("hi").call("refund", {"order_id": "O-1"}, {"order_id": "O-1"})
    assert not passes(rule, trace.call("refund", {"order_id": "o-1"}, {"order_id": "O-1"}))


def test_a_value_the_call_wrote_shows_how_the_tool_took_a_respelt_argument() -> None:
    rule = constraint(id="n", never={"tool": "set_status", "where": {"args.status": "cancelled"}})
    row = write("orders", "O-1", {"status": "ordered"}, {"status": "cancelled"})
    assert not passes(rule, Trace("hi").call("set_status", {"status": "Cancelled"}, writes=[row]))
    kept = write("orders", "O-1", {"status": "ordered"}, {"status": "Cancelled"})
    assert passes(rule, Trace("hi").call("set_status", {"status": "Cancelled"}, writes=[kept]))


def test_the_spacing_error_names_the_part_that_can_never_be_found(edited_bank: EditTask) -> None:
    rule = {"never": {"message": "agent", "matches": r"card\s\snumber"}}
    errors = _errors(edited_bank(_add(rule)).root)
    assert len(errors) == 1 and "'\\\\s\\\\s'" in errors[0] and "tasks/transfer.yaml" in errors[0]


def test_an_id_padded_with_a_million_spaces_is_still_the_record_the_tool_served() -> None:
    padded = " " * 500_000 + "o-1020" + "\n" * 500_000
    trace = Trace("hi").call("get_order", {"order_id": padded}, {"order_id": "O-1020"})
    assert not passes(NEVER_O1020, trace)


def test_a_value_longer_than_any_id_is_compared_as_written() -> None:
    from groundstate.grading.constraints._spelling import LONGEST

    long_value = "A" * (LONGEST + 1)
    rule = constraint(id="n", never={"tool": "note", "where": {"args.text": long_value}})
    assert not passes(rule, Trace("hi").call("note", {"text": long_value}))
    lower = long_value.lower()
    assert passes(rule, Trace("hi").call("note", {"text": lower}, {"text": long_value}))


def test_a_verbose_pattern_laid_out_on_lines_checks_clean(edited_bank: EditTask) -> None:
    pattern = "(?x)\n\trefund \\s issued   # the refund\n\t| card \\s number\n"
    rule = {"never": {"message": "agent", "matches": pattern}}
    assert _errors(edited_bank(_add(rule)).root) == []  # a tab outside (?x) is refused (round 41)
