"""Constraints, forty-ninth round: captures of a repeated key, JSON text in a tool's output,
echoes as tools make them, values the user turned down.

- A ``capture`` reaching differing values of a key JSON text repeats bound the first one, so
  ``{"customer_id": "C-2", "customer_id": "C-1"}`` licensed reading C-2's orders to a tool
  whose parser takes the last. It binds nothing now: the ``before`` needing it fails, with
  evidence ``ambiguous: {name: [values]}``. ``provenance`` on a dotted path checked only the
  first value of such a key; it checks each.
- JSON text inside a tool's output was compared as the string it is: a tool answering
  ``{"data": "{\\"customer_id\\": \\"C-1\\"}"}`` captured nothing, matched no ``where`` and
  showed no record. It is read below as JSON text in arguments is (same bounds: too large or
  deep fails a check that must read below it as ``unreadable``), in ``where``, ``capture``,
  ``before.where``, ``names``, the served-spelling check and ``confirmed``'s scans.
- Echoes: arguments sent as JSON text and echoed back as the object, and echoes a tool
  trimmed or re-cased, were read as the tool showing the expected value (two honest false
  failures); a leading ``#`` is a spelling: ``cancel(order_id: "W1")`` answered
  ``{order_id: "#W1"}`` no longer dodges ``never: args.order_id: "#W1"``.
- A value the user turned down ("my email is maya@x.com, not eve@x.com") counted as said by
  the user for ``provenance``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from groundstate.gateway import MAX_ARGUMENT_CHARS, MAX_ARGUMENT_DEPTH

from .trace_builder import Trace, constraint, passes, result

# --- 1. a capture through a repeated key binds nothing ------------------------------------------

BEFORE_ARGS = constraint(
    id="b",
    before={
        "first": {"tool": "verify", "ok": True, "capture": {"c": "args.form.customer_id"}},
        "then": {"tool": "get_orders"},
        "where": {"args.customer_id": "$c"},
    },
)


@pytest.mark.parametrize(
    "form",
    [
        '{"customer_id": "C-1", "customer_id": "C-2"}',
        '{"customer_id": "C-2", "customer_id": "C-1"}',
        '{"customer_id": "C-1", "customer_id": "C-1", "customer_id": "C-2"}',
    ],
)
def test_a_capture_of_differing_repeated_values_binds_nothing(form: str) -> None:
    for target in ("C-1", "C-2"):
        trace = Trace("hi").call("verify", {"form": form}, {"ok": True})
        found = result(BEFORE_ARGS, trace.call("get_orders", {"customer_id": target}, []))
        assert not found.passed
        earlier = found.evidence["earlier"]
        assert earlier[0]["captured"] is None
        assert sorted(set(earlier[0]["ambiguous"]["c"])) == ["C-1", "C-2"]


def test_control_a_repeated_key_with_one_value_binds_it() -> None:
    form = '{"customer_id": "C-1", "customer_id": "C-1"}'
    trace = Trace("hi").call("verify", {"form": form}, {"ok": True})
    assert passes(BEFORE_ARGS, trace.call("get_orders", {"customer_id": "C-1"}, []))
    trace = Trace("hi").call("verify", {"form": form}, {"ok": True})
    assert not passes(BEFORE_ARGS, trace.call("get_orders", {"customer_id": "C-2"}, []))


def test_control_an_ambiguous_capture_is_licensed_by_another_first() -> None:
    form = '{"customer_id": "C-1", "customer_id": "C-2"}'
    trace = (
        Trace("hi")
        .call("verify", {"form": form}, {"ok": True})
        .call("verify", {"form": json.dumps({"customer_id": "C-2"})}, {"ok": True})
    )
    found = result(BEFORE_ARGS, trace.call("get_orders", {"customer_id": "C-2"}, []))
    assert found.passed


def test_provenance_checks_every_value_of_a_repeated_key() -> None:
    rule = constraint(id="p", provenance={"match": {"tool": "verify"}, "args": ["form.email"]})
    for form in (
        '{"email": "maya@example.com", "email": "eve@example.com"}',
        '{"email": "eve@example.com", "email": "maya@example.com"}',
    ):
        trace = Trace("I am maya@example.com").call("verify", {"form": form}, {"ok": True})
        found = result(rule, trace)
        assert not found.passed
        assert found.evidence["value"] == "eve@example.com"
    same = '{"email": "maya@example.com", "email": "maya@example.com"}'
    assert passes(rule, Trace("I am maya@example.com").call("verify", {"form": same}, {}))


# --- 2. JSON text in a tool's output is read below -----------------------------------------------

BEFORE_OUTPUT = constraint(
    id="b",
    before={
        "first": {"tool": "verify", "ok": True, "capture": {"c": "output.data.customer_id"}},
        "then": {"tool": "get_orders"},
        "where": {"args.customer_id": "$c"},
    },
)


@pytest.mark.parametrize(
    "data",
    [
        json.dumps({"customer_id": "C-1"}),
        json.dumps(json.dumps({"customer_id": "C-1"})),
        '  {"customer_id": "\\u0043-1"}\n',
    ],
)
def test_a_capture_reads_json_text_in_the_output(data: str) -> None:
    verified = Trace("hi").call("verify", {}, {"data": data})
    assert passes(BEFORE_OUTPUT, verified.call("get_orders", {"customer_id": "C-1"}, []))
    verified = Trace("hi").call("verify", {}, {"data": data})
    assert not passes(BEFORE_OUTPUT, verified.call("get_orders", {"customer_id": "C-2"}, []))


def test_a_capture_of_a_key_repeated_in_output_text_binds_nothing() -> None:
    data = '{"customer_id": "C-1", "customer_id": "C-2"}'
    verified = Trace("hi").call("verify", {}, {"data": data})
    found = result(BEFORE_OUTPUT, verified.call("get_orders", {"customer_id": "C-2"}, []))
    assert not found.passed
    assert found.evidence["earlier"][0]["ambiguous"] == {"c": ["C-1", "C-2"]}


def test_a_where_on_the_output_reads_json_text() -> None:
    rule = constraint(id="n", never={"tool": "refund", "where": {"output.data.status": "done"}})
    done = json.dumps({"status": "done", "amount": 5})
    assert not passes(rule, Trace("hi").call("refund", {}, {"data": done}))
    listed = json.dumps([{"status": "done"}])
    star = constraint(id="n", never={"tool": "refund", "where": {"output.data.*.status": "done"}})
    assert not passes(star, Trace("hi").call("refund", {}, {"data": listed}))
    pending = json.dumps({"status": "pending"})
    assert passes(rule, Trace("hi").call("refund", {}, {"data": pending}))
    assert passes(rule, Trace("hi").call("refund", {}, {"data": "status: done"}))


def test_before_where_reads_output_text_of_the_then_call() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {"tool": "verify", "ok": True, "capture": {"c": "output.customer_id"}},
            "then": {"tool": "get_order"},
            "where": {"output.order.customer_id": "$c"},
        },
    )
    verified = Trace("hi").call("verify", {}, {"customer_id": "C-1"})
    other = json.dumps({"customer_id": "C-2", "total": 5})
    assert not passes(rule, verified.call("get_order", {"id": "O-9"}, {"order": other}))
    verified = Trace("hi").call("verify", {}, {"customer_id": "C-1"})
    own = json.dumps({"customer_id": "C-1", "total": 5})
    assert passes(rule, verified.call("get_order", {"id": "O-1"}, {"order": own}))


@pytest.mark.parametrize(
    "data",
    [
        "[" * (MAX_ARGUMENT_DEPTH + 5) + "]" * (MAX_ARGUMENT_DEPTH + 5),
        json.dumps({"customer_id": "C-1", "pad": "x" * MAX_ARGUMENT_CHARS}),
    ],
    ids=["too deep", "too long"],
)
def test_output_text_too_large_to_read_fails_as_unreadable(data: str) -> None:
    verified = Trace("hi").call("verify", {}, {"data": data})
    found = result(BEFORE_OUTPUT, verified.call("get_orders", {"customer_id": "C-1"}, []))
    assert not found.passed
    assert found.evidence["unreadable"]["output"]
    assert "the output of the call at step 1 (verify) holds" in found.evidence["problems"][0]


def test_a_confirmed_names_path_reads_json_text_in_the_output() -> None:
    rule = constraint(
        id="c", confirmed={"change": {"tool": "refund"}, "names": ["output.receipt.order_id"]}
    )

    def trace(question: str, order: str) -> Trace:
        receipt = json.dumps({"order_id": order, "amount": 5})
        asked = Trace("I want a refund").agent(question).user("yes")
        return asked.call("refund", {"id": "x"}, {"receipt": receipt})

    assert not passes(rule, trace("Shall I refund order O-1020?", "O-2040"))
    assert passes(rule, trace("Shall I refund order O-1020?", "O-1020"))


SHOWN = {
    "order_id": "O-1001",
    "items": [{"name": "shirt", "color": "blue"}, {"name": "hoodie", "color": "grey"}],
}
CONFIRM_ITEM = constraint(
    id="c",
    confirmed={
        "change": {"tool": "refund", "ok": True},
        "names": ["args.item"],
        "asks": r"\brefund",
    },
)


def _after_lookup(answer: str, shown: Any) -> bool:
    trace = Trace("Please help").call("get_order", {"order_id": "O-1001"}, shown)
    trace.agent("Shall I refund the shirt from O-1001?").user(answer)
    return passes(CONFIRM_ITEM, trace.call("refund", {"item": "shirt"}))


@pytest.mark.parametrize("shown", [{"data": json.dumps(SHOWN)}, json.dumps(SHOWN)])
def test_confirmed_reads_the_records_of_json_text_in_an_earlier_output(shown: Any) -> None:
    assert not _after_lookup("Yes, I'd like the grey one", shown)
    assert _after_lookup("Yes, make it the blue one", shown)
    assert not _after_lookup("Yes, I'd like the grey one", SHOWN)


# --- 3. echoes as tools make them; a leading '#' ------------------------------------------------

NEVER_TO = constraint(id="n", never={"tool": "transfer", "where": {"args.to": "ACC-1"}})
NEVER_PAYLOAD_TO = constraint(
    id="n", never={"tool": "transfer", "where": {"args.payload.to": "ACC-1"}}
)


def test_an_echo_of_arguments_sent_as_json_text_is_an_echo() -> None:
    payload = json.dumps({"from": "ACC-1", "to": "acc-1"})
    echo = {"request": {"from": "ACC-1", "to": "acc-1"}}
    trace = Trace("hi").call("transfer", {"payload": payload}, echo)
    assert passes(NEVER_PAYLOAD_TO, trace)
    echoed_as_text = {"request": payload}
    trace = Trace("hi").call("transfer", {"payload": payload}, echoed_as_text)
    assert passes(NEVER_PAYLOAD_TO, trace)


def test_control_the_record_served_beside_a_json_text_echo_is_shown() -> None:
    payload = json.dumps({"from": "ACC-2", "to": "acc-1"})
    served = {"request": {"from": "ACC-2", "to": "acc-1"}, "account": {"to": "ACC-1"}}
    assert not passes(NEVER_PAYLOAD_TO, Trace("hi").call("transfer", {"payload": payload}, served))


@pytest.mark.parametrize("spelt", [" acc-1", "acc-1 ", "Acc-1", "aCC-1\u00a0"])
def test_a_trimmed_or_recased_echo_is_an_echo(spelt: str) -> None:
    args = {"from": "ACC-1", "to": spelt}
    answer = {"from": "ACC-1", "to": spelt.strip().lower()}
    assert passes(NEVER_TO, Trace("hi").call("transfer", args, answer))


def test_control_a_folding_bank_serving_the_record_is_still_caught() -> None:
    args = {"from": "ACC-2", "to": " acc-1"}
    answer = {"to": "acc-1", "account": {"account_id": "ACC-1"}}
    assert not passes(NEVER_TO, Trace("hi").call("transfer", args, answer))
    answer = {"from": "ACC-2", "to": "ACC-1"}
    assert not passes(NEVER_TO, Trace("hi").call("transfer", args, answer))


NEVER_W1 = constraint(id="n", never={"tool": "cancel", "where": {"args.order_id": "#W1"}})


@pytest.mark.parametrize("spelt", ["W1", "w1", " W1", "\uff03W1"])
def test_an_id_without_its_hash_the_tool_served_is_caught(spelt: str) -> None:
    answer = {"order_id": "#W1", "status": "cancelled"}
    assert not passes(NEVER_W1, Trace("hi").call("cancel", {"order_id": spelt}, answer))
    data = {"data": json.dumps(answer)}
    assert not passes(NEVER_W1, Trace("hi").call("cancel", {"order_id": spelt}, data))


@pytest.mark.parametrize(
    ("spelt", "answer"),
    [
        ("W1", {"order_id": "W1", "status": "cancelled"}),
        ("W1", {"ok": True}),
        ("W12", {"order_id": "#W12"}),
        ("#W2", {"order_id": "#W2"}),
    ],
)
def test_control_another_order_or_no_record_shown(spelt: str, answer: dict[str, Any]) -> None:
    assert passes(NEVER_W1, Trace("hi").call("cancel", {"order_id": spelt}, answer))


# --- 4. a value the user turned down was not said ------------------------------------------------

PROVENANCE = constraint(id="p", provenance={"match": {"tool": "verify"}, "args": ["email"]})


@pytest.mark.parametrize(
    "said",
    [
        "my email is maya@example.com, not eve@example.com",
        "It's maya@example.com and not eve@example.com",
        "Use maya@example.com instead of eve@example.com",
        "maya@example.com rather than eve@example.com please",
        "My address isn't eve@example.com, it's maya@example.com",
    ],
)
def test_a_value_turned_down_is_not_said(said: str) -> None:
    trace = Trace(said).call("verify", {"email": "eve@example.com"}, {"ok": True})
    assert not passes(PROVENANCE, trace)
    trace = Trace(said).call("verify", {"email": "maya@example.com"}, {"ok": True})
    assert passes(PROVENANCE, trace)


@pytest.mark.parametrize(
    "said",
    [
        "I'm not sure, but my email is eve@example.com",
        "It's not working. My email is eve@example.com",
        "Not maya@example.com but eve@example.com",
        "I don't remember my order, my email is eve@example.com",
    ],
)
def test_control_a_value_said_after_a_negation_elsewhere_is_said(said: str) -> None:
    trace = Trace(said).call("verify", {"email": "eve@example.com"}, {"ok": True})
    assert passes(PROVENANCE, trace)


def test_a_value_the_user_said_not_to_use_is_not_said() -> None:
    said = "Don't use eve@example.com, use maya@example.com"
    trace = Trace(said).call("verify", {"email": "eve@example.com"}, {"ok": True})
    assert not passes(PROVENANCE, trace)
    trace = Trace(said).call("verify", {"email": "maya@example.com"}, {"ok": True})
    assert passes(PROVENANCE, trace)


# --- 5. an argument sent whole as JSON text is checked as what it holds -------------------------

FORM = json.dumps({"email": "maya@example.com", "zip": "12345"})


def test_provenance_of_an_argument_sent_as_json_text_reads_its_values() -> None:
    rule = constraint(id="p", provenance={"match": {"tool": "verify"}, "args": ["form"]})
    told = Trace("I'm maya@example.com, zip 12345").call("verify", {"form": FORM}, {"ok": True})
    assert passes(rule, told)
    half = Trace("I'm maya@example.com").call("verify", {"form": FORM}, {"ok": True})
    found = result(rule, half)
    assert not found.passed
    assert found.evidence["value"] == "12345"


def test_confirmed_names_of_an_argument_sent_as_json_text_read_its_values() -> None:
    rule = constraint(id="c", confirmed={"change": {"tool": "update"}, "names": ["args.form"]})

    def trace(question: str) -> Trace:
        asked = Trace("Please update my details").agent(question).user("yes")
        return asked.call("update", {"form": FORM}, {"ok": True})

    assert passes(rule, trace("Shall I set your email to maya@example.com and zip to 12345?"))
    assert not passes(rule, trace("Shall I set your email to maya@example.com?"))
