"""Constraints, forty-seventh round: JSON text in arguments, repeated keys, positional calls.

- A path into the arguments never looked inside a string: an agent passing
  ``{"payload": "{\\"order_id\\": \\"#W1\\", \\"amount\\": 500}"}`` to a tool taking
  ``payload`` as JSON text hid the order and the amount from
  ``never: {where: {args.payload.order_id: "#W1"}}``. A path going below a string in the
  arguments now reads the JSON text it holds (an object or a list; whitespace, escapes, text
  encoded twice); a string that is no such text has nothing below it, as before.
- A key the JSON text repeats (``{"order_id": "#W2", "order_id": "#W1"}``) holds each of
  its values: parsers differ on which wins, so a ``never`` sees both and ``before.where``
  needs both licensed.
- JSON text nested deeper than the gateway lets arguments be fails a check reading below it
  (unreadable), never crashes it.
- ``check`` accepts a path below an argument declared a string (JSON text can hold it), and
  still refuses one below an integer.
- Positional arguments (a list) never reach a tool: the adapters and the gateway refuse
  them; the refused call is still a call of the tool.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from groundstate.spec.constraints import HardConstraint

from .conftest import EditTask
from .trace_builder import Trace, constraint, write

ORDER = {"order_id": "#W1", "amount": 500}
NEVER_W1 = constraint(id="n", never={"tool": "refund", "where": {"args.payload.order_id": "#W1"}})
NEVER_BIG = constraint(id="n", never={"tool": "refund", "where": {"args.payload.amount": 500}})


def passes(rule: HardConstraint, trace: Trace) -> bool:
    result = trace.check(rule)
    assert result.error is None, result.error
    return result.passed


def _refund(payload: Any, output: Any = None, **fields: Any) -> Trace:
    return Trace("hi").call("refund", {"payload": payload, **fields}, output or {"ok": True})


# --- 1. JSON text is read where a path goes below it -------------------------------------------

HIDDEN = {
    "compact": json.dumps(ORDER, separators=(",", ":")),
    "spaced": json.dumps(ORDER, indent=4),
    "padded": "  \n\t" + json.dumps(ORDER) + " \r\n",
    "escaped": '{"order_id": "\\u0023W1", "amount": 5e2}',
    "slash-escaped": '{"order\\u005fid": "\\u0023W1", "am\\u006funt": 500.0}',
    "encoded twice": json.dumps(json.dumps(ORDER)),
    "encoded thrice": json.dumps(json.dumps(json.dumps(ORDER))),
    "beside other members": json.dumps({"note": "thanks", **ORDER, "meta": {"a": [1]}}),
    "padded by no-break spaces": "\u00a0" + json.dumps(ORDER) + "\u2003",
    "beside an integer too long for int()": '{"order_id": "#W1", "amount": 500, "n": '
    + "7" * 5000
    + "}",
    "beside NaN": '{"order_id": "#W1", "amount": 500, "x": NaN}',
    "long": json.dumps({"note": "x" * 200_000, **ORDER}),
    "long, encoded twice": json.dumps(json.dumps({"note": "x" * 50_000, **ORDER})),
}


@pytest.mark.parametrize("payload", HIDDEN.values(), ids=HIDDEN.keys())
def test_a_forbidden_order_in_json_text_is_caught(payload: str) -> None:
    assert not passes(NEVER_W1, _refund(payload))
    assert not passes(NEVER_BIG, _refund(payload))


def test_json_text_nested_in_json_text_is_read() -> None:
    payload = json.dumps({"kind": "refund", "inner": json.dumps(ORDER)})
    rule = constraint(
        id="n", never={"tool": "refund", "where": {"args.payload.inner.order_id": "#W1"}}
    )
    assert not passes(rule, _refund(payload))
    assert passes(rule, _refund(json.dumps({"inner": json.dumps({"order_id": "#W2"})})))


def test_a_list_in_json_text_is_read_through_a_star() -> None:
    rule = constraint(id="n", never={"tool": "refund", "where": {"args.items.*": "I-1"}})
    assert not passes(rule, Trace("hi").call("refund", {"items": '["I-2", "I-1"]'}, {"ok": 1}))
    assert passes(rule, Trace("hi").call("refund", {"items": '["I-2", "I-3"]'}, {"ok": 1}))
    together = constraint(
        id="n",
        never={"tool": "refund", "where": {"args.items.*.id": "I-1", "args.items.*.qty": 2}},
    )
    apart = json.dumps([{"id": "I-1", "qty": 1}, {"id": "I-2", "qty": 2}])
    assert passes(together, Trace("hi").call("refund", {"items": apart}, {"ok": 1}))
    one = json.dumps([{"id": "I-2", "qty": 1}, {"id": "I-1", "qty": 2}])
    assert not passes(together, Trace("hi").call("refund", {"items": one}, {"ok": 1}))


def test_a_match_args_object_is_found_in_json_text() -> None:
    rule = constraint(id="n", never={"tool": "refund", "args": {"payload": {"order_id": "#W1"}}})
    assert not passes(rule, _refund(json.dumps(ORDER)))
    assert not passes(rule, _refund(json.dumps(json.dumps(ORDER))))
    assert passes(rule, _refund(json.dumps({"order_id": "#W2"})))
    assert passes(rule, _refund("order #W1"))


def test_before_where_reads_json_text_both_ways() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {"tool": "verify", "ok": True, "capture": {"c": "output.customer_id"}},
            "then": {"tool": "get_orders"},
            "where": {"args.query.customer_id": "$c"},
        },
    )

    def trace(query: str) -> Trace:
        verified = Trace("hi").call("verify", {"email": "a@b.c"}, {"customer_id": "C-1"})
        return verified.call("get_orders", {"query": query}, [])

    assert passes(rule, trace('{"customer_id": "C-1"}'))
    assert not passes(rule, trace('{"customer_id": "C-2"}'))
    assert not passes(rule, trace("C-1"))  # no JSON text: the path is missing, as before


def test_provenance_reads_an_argument_in_json_text() -> None:
    rule = constraint(id="p", provenance={"match": {"tool": "verify"}, "args": ["form.email"]})
    form = json.dumps({"email": "maya@example.com"})
    told = Trace("I am maya@example.com").call("verify", {"form": form}, {"ok": True})
    untold = Trace("hi, verify me").call("verify", {"form": form}, {"ok": True})
    assert passes(rule, told)
    assert not passes(rule, untold)


def test_a_number_respelt_in_json_text_is_read_as_the_tool_took_it() -> None:
    payload = json.dumps({"order_id": "#W1", "amount": "5e2"})
    assert not passes(NEVER_BIG, _refund(payload, {"refunded": 500}))  # the tool read 500
    assert passes(NEVER_BIG, _refund(payload, {"refunded": "5e2"}))  # shown only as given


# --- 2. honest strings keep passing ------------------------------------------------------------

HONEST = {
    "truncated json": '{"order_id": "#W1", "amount": 500',
    "braces around an id": "{#W1}",
    "unquoted keys": "{order_id: #W1, amount: 500}",
    "bracketed note": "[note] refund #W1 for 500",
    "trailing words": json.dumps(ORDER) + " thanks",
    "json scalar text": json.dumps("#W1"),
    "json number text": "500",
    "another order": json.dumps({"order_id": "#W2", "amount": 20}),
    "empty": "",
    "only a brace": "{",
    "single quotes": "{'order_id': '#W1', 'amount': 500}",
}


@pytest.mark.parametrize("payload", HONEST.values(), ids=HONEST.keys())
def test_a_string_that_is_no_such_json_text_hides_nothing_and_crashes_nothing(
    payload: str,
) -> None:
    assert passes(NEVER_W1, _refund(payload))
    assert passes(NEVER_BIG, _refund(payload))


def test_a_path_ending_at_the_string_compares_the_value_it_encodes() -> None:
    text = json.dumps(ORDER)
    rule = constraint(id="n", never={"tool": "refund", "where": {"args.payload": text}})
    assert not passes(rule, _refund(text))
    # Round 51: another spelling of the same JSON is the same value; another value is not.
    assert not passes(rule, _refund(json.dumps(ORDER, indent=2)))
    assert passes(rule, _refund(json.dumps({**ORDER, "amount": 5})))


def test_plain_objects_are_read_as_before() -> None:
    assert not passes(NEVER_W1, _refund(dict(ORDER)))
    assert passes(NEVER_W1, _refund({"order_id": "#W2"}))


def test_the_tools_report_is_read_as_json_text_since_round_49() -> None:
    # Round 49 reads JSON text in an output as in arguments (tests/test_constraints_round49.py).
    rule = constraint(id="n", never={"tool": "refund", "where": {"output.data.order_id": "#W1"}})
    assert not passes(rule, _refund({}, {"data": json.dumps(ORDER)}))
    assert not passes(rule, _refund({}, {"data": dict(ORDER)}))


# --- 3. a repeated key holds each of its values -------------------------------------------------

REPEATED = '{"order_id": "#W2", "amount": 1, "order_id": "#W1"}'
REPEATED_FIRST = '{"order_id": "#W1", "amount": 1, "order_id": "#W2"}'


@pytest.mark.parametrize("payload", [REPEATED, REPEATED_FIRST])
def test_a_repeated_key_is_seen_whichever_value_wins(payload: str) -> None:
    assert not passes(NEVER_W1, _refund(payload))
    args_rule = constraint(
        id="n", never={"tool": "refund", "args": {"payload": {"order_id": "#W1"}}}
    )
    assert not passes(args_rule, _refund(payload))


def test_a_repeated_key_needs_every_value_licensed() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {"tool": "verify", "ok": True, "capture": {"c": "output.customer_id"}},
            "then": {"tool": "get_orders"},
            "where": {"args.query.customer_id": "$c"},
        },
    )
    verified = Trace("hi").call("verify", {}, {"customer_id": "C-1"})
    twice = '{"customer_id": "C-1", "customer_id": "C-1"}'
    assert passes(rule, verified.call("get_orders", {"query": twice}, []))
    verified = Trace("hi").call("verify", {}, {"customer_id": "C-1"})
    mixed = '{"customer_id": "C-1", "customer_id": "C-2"}'
    assert not passes(rule, verified.call("get_orders", {"query": mixed}, []))


def test_conditions_on_one_repeated_object_are_met_by_one_value() -> None:
    rule = constraint(
        id="n",
        never={
            "tool": "refund",
            "where": {"args.payload.order.id": "#W1", "args.payload.order.amount": 500},
        },
    )
    apart = '{"order": {"id": "#W1", "amount": 5}, "order": {"id": "#W2", "amount": 500}}'
    assert passes(rule, _refund(apart))
    one = '{"order": {"id": "#W2", "amount": 5}, "order": {"id": "#W1", "amount": 500}}'
    assert not passes(rule, _refund(one))


# --- 4. bounds: too deep is unreadable, never a crash ------------------------------------------


def _deep(levels: int) -> str:
    return '{"order_id": "#W2", "pad": ' + "[" * levels + "]" * levels + "}"


@pytest.mark.parametrize("levels", [100, 5_000, 200_000])
def test_json_text_nested_too_deeply_fails_a_check_reading_below_it(levels: int) -> None:
    result = _refund(_deep(levels)).check(NEVER_W1)
    assert result.error is None and not result.passed
    assert result.evidence["unreadable"]["step"] == 1
    assert "nested deeper" in result.evidence["unreadable"]["arguments"]


def test_json_text_within_the_bound_is_read() -> None:
    assert passes(NEVER_W1, _refund(_deep(40)))
    assert not passes(NEVER_W1, _refund(_deep(40).replace("#W2", "#W1")))


def test_deep_json_text_no_check_reads_below_is_left_alone() -> None:
    rule = constraint(id="n", never={"tool": "refund", "where": {"args.reason": "fraud"}})
    assert passes(rule, _refund(_deep(5_000), reason="damaged"))


# --- 5. the suite check: a path below a string argument may be JSON text ---------------------


def _problems(edited_bank: EditTask, rule: dict[str, Any]) -> list[str]:
    from groundstate.validation.static import check_suite

    def change(task: dict[str, Any]) -> None:
        task["hard_process_constraints"].append(rule)

    return [str(p) for p in check_suite(edited_bank(change).root).errors]


@pytest.mark.parametrize(
    "match",
    [
        {"tool": "transfer", "where": {"args.source.account": "A"}},
        {"tool": "transfer", "where": {"args.source.accounts.*": "A"}},
        {"tool": "transfer", "args": {"source": {"account": "A"}}},
        {"tool": "transfer", "args": {"source": {"account": {"id": "A"}}}},
    ],
)
def test_check_accepts_a_path_below_a_string_argument(edited_bank: EditTask, match: Any) -> None:
    assert _problems(edited_bank, {"id": "x", "never": match}) == []


@pytest.mark.parametrize(
    "match",
    [
        {"tool": "transfer", "where": {"args.amount.value": 30}},
        {"tool": "transfer", "args": {"amount": {"value": 30}}},
        {"tool": "transfer", "where": {"args.amount": "30"}},
    ],
)
def test_check_still_refuses_what_no_accepted_call_has(edited_bank: EditTask, match: Any) -> None:
    errors = _problems(edited_bank, {"id": "x", "never": match})
    assert len(errors) == 1 and "no accepted call has it" in errors[0], errors


# --- 6. positional arguments never reach a tool -------------------------------------------------


@pytest.mark.parametrize("raw", ['["A", "B", 30]', '"{\\"source\\": \\"A\\"}"', "30"])
def test_the_model_adapters_refuse_arguments_that_are_no_object(raw: str) -> None:
    from groundstate.agents.model_loop import parse_arguments

    _, problem = parse_arguments(raw)
    assert problem is not None and "must be a JSON object" in problem


def test_the_gateway_refuses_positional_arguments_and_the_call_stays_a_call(bank: Any) -> None:
    from groundstate.environments.sqlite import SqliteEnvironment
    from groundstate.gateway import ToolGateway

    events: list[Any] = []
    with SqliteEnvironment(bank.root / "fixtures" / "bank.sql", clock=datetime(2026, 1, 15)) as env:
        env.reset()
        gateway = ToolGateway(bank.tools, env, events.append, lambda: 0.0)
        result = gateway.call(1, "transfer", ["A", "B", 30])
    assert not result.ok and result.error_class == "invalid_arguments"
    trace = Trace("hi")
    trace.events.append(events[0].model_copy(update={"step": 1}))
    assert not passes(constraint(id="n", never={"tool": "transfer"}), trace)
    refused = {"tool": "transfer", "where": {"error_class": "invalid_arguments"}}
    assert not passes(constraint(id="n", never=refused), trace)
    assert passes(constraint(id="n", never={"tool": "transfer", "ok": True}), trace)


def test_arguments_sent_whole_as_json_text_are_read_as_sent() -> None:
    # refused by the gateway (no object), yet the attempt of the forbidden refund
    trace = Trace("hi")
    trace.call("refund", {}, None, ok=False)
    trace.events[-1] = trace.events[-1].model_copy(
        update={"args": json.dumps({"payload": ORDER}), "error_class": "invalid_arguments"}
    )
    assert not passes(NEVER_W1, trace)
    args_rule = constraint(id="n", never={"tool": "refund", "args": {"payload": {"amount": 500}}})
    assert not passes(args_rule, trace)
    only_ran = {"tool": "refund", "ok": True, "where": {"args.payload.order_id": "#W1"}}
    assert passes(constraint(id="n", never=only_ran), trace)


# --- 7. writes: unchanged (the environment's report) -------------------------------------------


def test_a_write_of_json_text_is_compared_as_written() -> None:
    rule = constraint(id="n", never={"writes": {"table": "orders", "key": "#W1"}})
    row = write("orders", json.dumps("#W1"), None, {"status": "refunded"})
    assert passes(rule, Trace("hi").call("refund", {}, {"ok": 1}, writes=[row]))


def test_elements_of_a_list_written_as_json_text_are_read() -> None:
    rule = constraint(id="n", never={"tool": "refund", "where": {"args.items.*.id": "I-1"}})
    hidden = ['{"id": "I-2"}', '{"id": "I-1", "qty": 1}']
    assert not passes(rule, Trace("hi").call("refund", {"items": hidden}, {"ok": 1}))
    assert passes(rule, Trace("hi").call("refund", {"items": ['{"id": "I-2"}', "I-1"]}, {"ok": 1}))
    licensed = constraint(
        id="b",
        before={
            "first": {"tool": "list", "ok": True, "capture": {"i": "output.*.id"}},
            "then": {"tool": "refund"},
            "where": {"args.items.*.id": "$i"},
        },
    )
    listed = Trace("hi").call("list", {}, [{"id": "I-2"}])
    assert not passes(licensed, listed.call("refund", {"items": hidden}, {"ok": 1}))
    listed = Trace("hi").call("list", {}, [{"id": "I-2"}, {"id": "I-1"}])
    assert passes(licensed, listed.call("refund", {"items": hidden}, {"ok": 1}))
