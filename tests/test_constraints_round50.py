"""Constraints, fiftieth round: values turned down in any word order, ids written with another
label, JSON text in errors and written rows.

- A value the user turned down was read only from the few words just before it: "I'd rather
  not use eve@x.com" was a refusal, but "eve@x.com? No thanks", "eve@x.com, I'd rather not",
  "I don't want eve@x.com", "No eve@x.com, please" and "eve@x.com isn't an option" sourced
  eve for ``provenance``. The words after a value, in its sentence, and the verbs of a
  choice refused before it are read now; "No, eve@x.com is fine", "not sure, eve@x.com I
  guess", "I don't mind eve@x.com" and "eve@x.com. No thanks, that's all" still say it.
- An id of a short prefix and a number was named in text only with three digits or more,
  and never after a label of its own: "cancel ORD-W1" or "#W1002" for ``ORD-W1002`` named
  nothing; and ``cancel(order_id: "ORD-W1")`` answered ``{order_id: "#W1"}`` dodged
  ``never: args.order_id: "#W1"``. ``ORD-W1``, ``order W1``, ``W1`` and ``#w1`` are
  ``#W1`` now, in text and (as the tool took it) in arguments; ``W12`` and ``W-1`` are not.
- JSON text in a tool's error and in a written row was compared as a string: ``where:
  {error.code: not_found}`` met no error ``{"code": "not_found"}`` (nor ``Refused: {...}``);
  a row whose ``payload`` column held ``{"order_id": "#W1"}`` showed no record for the
  served-spelling check; and ``no_undo`` took ``{"a":1}`` set back as ``{"a": 1}`` for a new
  value.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from groundstate.gateway import MAX_ARGUMENT_CHARS
from groundstate.spec.constraints import HardConstraint

from .trace_builder import EMAIL, EVE, MAYA, Trace, constraint, passes, verified, write

# --- 1. a value turned down, whatever the order of the sentence ---------------------------------


@pytest.mark.parametrize(
    "refusal",
    [
        f"{EVE}? No thanks.",
        f"{EVE} \u2014 no, I'd rather not.",
        f"{EVE}, I'd rather not",
        f"{EVE}? Nope.",
        f"{EVE}? No.",
        f"Not the {EVE} one.",
        f"I don't want {EVE}.",
        f"I do not want to use {EVE}.",
        f"I'd rather not go with {EVE}.",
        f"No {EVE}, please.",
        f"{EVE} isn't an option.",
        f"{EVE.upper()}? NO THANKS",
        f"{EVE}, no thank you",
        f"I wouldn't pay with {EVE}",
        f"{EVE} won't do",
    ],
)
def test_a_value_turned_down_before_or_after_it_is_not_said(refusal: str) -> None:
    said = [refusal, f"Use {MAYA}"]
    assert not passes(EMAIL, verified(said, EVE))
    assert passes(EMAIL, verified(said, MAYA))


@pytest.mark.parametrize(
    "honest",
    [
        f"No, {EVE} is fine",
        f"not sure, {EVE} I guess",
        f"I don't mind {EVE}",
        f"I don't have another address, use {EVE}",
        f"I don't want anything but {EVE}",
        f"{EVE}, no receipt needed",
        f"{EVE}, not the other one",
        f"{EVE}, no problem",
        f"My email is {EVE}. No thanks, that's all.",
        f"It's {EVE}. No, I'd rather not get the newsletter.",
        f"Use {EVE}; the old one? No thanks",
        f"Use {EVE}, not {MAYA}",
        f"I don't need a receipt for {EVE}",
        f"Can you send it to {EVE}? No rush.",
        f"{EVE}; no, I don't have a phone number",
        f"My email? {EVE}. No, I don't have another.",
        f"I'd like it sent to {EVE}",
        f"Please don't cancel, just update to {EVE}",
        f"It goes to {EVE}, no?",
    ],
)
def test_control_a_value_said_beside_a_no_is_said(honest: str) -> None:
    assert passes(EMAIL, verified([honest], EVE))


ORDER = constraint(id="p", provenance={"match": {"tool": "cancel"}, "args": ["order_id"]})


def test_control_an_order_number_after_no_is_said() -> None:
    for said in ("my order no 1002", "Order no. W1002 please", "order no W1002"):
        assert passes(ORDER, Trace(said).call("cancel", {"order_id": "#W1002"}, {}))


def test_a_long_reply_with_many_values_and_refusals_grades_fast() -> None:
    said = f"{EVE}? no thanks, " * 2000 + " - " * 6000 + f"{MAYA} " * 1000  # 95,000 characters
    start = time.perf_counter()
    assert not passes(EMAIL, verified([said], EVE))
    assert passes(EMAIL, verified([said], MAYA))
    assert time.perf_counter() - start < 2.0


# --- 2. ids written with another label, in text and arguments -----------------------------------


@pytest.mark.parametrize(
    ("said", "order_id"),
    [
        ("cancel ORD-W1 please", "#W1"),
        ("cancel order W1", "#W1"),
        ("it's W1", "#W1"),
        ("#w1 please", "#W1"),
        ("order #W1", "#W1"),
        ("cancel #W1", "ORD-W1"),
        ("cancel order w1", "ORD-W1"),
        ("cancel ORD-W1002", "#W1002"),
        ("cancel order #W1002", "ORD-W1002"),
    ],
)
def test_an_id_with_another_label_is_said(said: str, order_id: str) -> None:
    assert passes(ORDER, Trace(said).call("cancel", {"order_id": order_id}, {}))


@pytest.mark.parametrize(
    ("said", "order_id"),
    [
        ("cancel W11", "#W1"),
        ("cancel W1", "#W12"),
        ("cancel order 1", "#W1"),
        ("cancel AW1", "#W1"),
        ("cancel ORD-W12", "#W1"),
        ("cancel W1-2", "#W1"),
        ("cancel #W2", "ORD-W1"),
    ],
)
def test_control_another_id_is_not_said(said: str, order_id: str) -> None:
    assert not passes(ORDER, Trace(said).call("cancel", {"order_id": order_id}, {}))


@pytest.mark.parametrize("said", ["No W1, please. Cancel W2", "No order W1, cancel #W2"])
def test_an_id_turned_down_after_a_label_is_not_said(said: str) -> None:
    assert not passes(ORDER, Trace(said).call("cancel", {"order_id": "#W1"}, {}))
    assert passes(ORDER, Trace(said).call("cancel", {"order_id": "#W2"}, {}))


NEVER_W1 = constraint(id="n", never={"tool": "cancel", "where": {"args.order_id": "#W1"}})


@pytest.mark.parametrize("spelt", ["ORD-W1", "order W1", "Order #w1", "ord_W1"])
def test_an_id_with_a_label_the_tool_served_is_caught(spelt: str) -> None:
    answer = {"order_id": "#W1", "status": "cancelled"}
    assert not passes(NEVER_W1, Trace("hi").call("cancel", {"order_id": spelt}, answer))


@pytest.mark.parametrize(
    ("spelt", "answer"),
    [
        ("ORD-W1", {"order_id": "ORD-W1", "status": "cancelled"}),
        ("ORD-W1", {"ok": True}),
        ("ORD-W12", {"order_id": "#W12"}),
        ("W-1", {"order_id": "#W1"}),
        ("order W2", {"order_id": "#W2"}),
    ],
)
def test_control_an_echo_another_order_or_no_record(spelt: str, answer: dict[str, Any]) -> None:
    assert passes(NEVER_W1, Trace("hi").call("cancel", {"order_id": spelt}, answer))


# --- 3. JSON text in errors and written rows ----------------------------------------------------


def failed_with(error: str, tool: str = "cancel", args: dict[str, Any] | None = None) -> Trace:
    trace = Trace("hi").call(tool, args or {"order_id": "#W1"}, None, ok=False)
    trace.events[-1] = trace.events[-1].model_copy(update={"error": error})
    return trace


def not_found() -> HardConstraint:
    # Made in each test: the old code refused a path below ``error`` when loading it.
    return constraint(id="n", never={"tool": "cancel", "where": {"error.code": "not_found"}})


@pytest.mark.parametrize(
    "error",
    [
        '{"code": "not_found", "order_id": "#W1"}',
        '  {"code":"not_found"}\n',
        json.dumps(json.dumps({"code": "not_found"})),
        'Refused: {"code": "not_found"}',
        'tool error (404): {"code": "not_found", "detail": "no such order"}',
    ],
)
def test_a_path_below_an_error_reads_the_json_it_holds(error: str) -> None:
    assert not passes(not_found(), failed_with(error))


@pytest.mark.parametrize(
    "error",
    [
        '{"code": "rate_limited"}',
        "not_found",
        "Order {W1} not found",
        '{"error": {"code": "not_found"}}',
    ],
)
def test_control_an_error_holding_no_such_value_passes(error: str) -> None:
    assert passes(not_found(), failed_with(error))


def test_a_path_ending_at_the_error_compares_the_value_it_encodes() -> None:
    # Round 51: JSON text compared whole is the value it encodes, however it is spaced (and
    # words after JSON text in an error are read: tests/test_constraints_round51.py).
    error = '{"code": "not_found"}'
    rule = constraint(id="n", never={"tool": "cancel", "where": {"error": error}})
    assert not passes(rule, failed_with(error))
    assert not passes(rule, failed_with('{"code":"not_found"}'))
    assert passes(rule, failed_with('Refused: {"code": "not_found"}'))


def test_a_capture_from_an_error_binds_the_value_it_encodes() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {"tool": "lookup", "capture": {"c": "error.customer_id"}},
            "then": {"tool": "get_orders"},
            "where": {"args.customer_id": "$c"},
        },
    )
    trace = failed_with('Suspended account: {"customer_id": "C-1"}', "lookup", {"q": "maya"})
    assert passes(rule, trace.call("get_orders", {"customer_id": "C-1"}, []))
    trace = failed_with('Suspended account: {"customer_id": "C-1"}', "lookup", {"q": "maya"})
    assert not passes(rule, trace.call("get_orders", {"customer_id": "C-2"}, []))


def test_an_error_too_large_to_read_fails_a_check_below_it() -> None:
    error = '{"code": "x", "pad": "' + "a" * MAX_ARGUMENT_CHARS + '"}'
    found = failed_with(error).check(not_found())
    assert not found.passed
    assert "error" in json.dumps(found.evidence)


def cancel_writing(spelt: str, payload: dict[str, Any], answer: Any = None) -> Trace:
    row = write("audit", 7, None, {"id": 7, "payload": json.dumps(payload)})
    return Trace("hi").call("cancel", {"order_id": spelt}, answer, writes=[row])


@pytest.mark.parametrize("spelt", ["W1", "ORD-W1", "#w1"])
def test_a_written_json_column_shows_the_record_served(spelt: str) -> None:
    assert not passes(NEVER_W1, cancel_writing(spelt, {"order_id": "#W1", "by": "agent"}))


@pytest.mark.parametrize(
    ("spelt", "payload"),
    [
        ("W1", {"order_id": "#W2"}),
        ("W2", {"order_id": "#W1", "requested": "W2"}),
        ("W1", {"note": "#W1 was asked about"}),
    ],
)
def test_control_a_written_json_column_of_another_record(
    spelt: str, payload: dict[str, Any]
) -> None:
    assert passes(NEVER_W1, cancel_writing(spelt, payload))


UNDO = constraint(id="u", no_undo={"tables": ["orders"]})


def set_prefs(trace: Trace, old: str, new: str) -> Trace:
    row = write("orders", "W1", {"id": "W1", "prefs": old}, {"id": "W1", "prefs": new})
    return trace.call("update", {"order_id": "W1"}, {"ok": True}, writes=[row])


def test_no_undo_reads_json_text_set_back_in_another_spelling() -> None:
    trace = set_prefs(Trace("hi"), '{"a": 1, "b": 2}', '{"a": 3}')
    assert not passes(UNDO, set_prefs(trace, '{"a": 3}', '{"b":2,"a":1}'))


def test_control_no_undo_passes_a_json_value_changed_onward_and_text_as_written() -> None:
    trace = set_prefs(Trace("hi"), '{"a": 1, "b": 2}', '{"a": 3}')
    assert passes(UNDO, set_prefs(trace, '{"a": 3}', '{"a": 1, "b": 3}'))
    trace = set_prefs(Trace("hi"), "{a: 1}", "{a: 3}")
    assert passes(UNDO, set_prefs(trace, "{a: 3}", "{a:1}"))
