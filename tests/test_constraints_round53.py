"""Constraints, fifty-third round: every record an error holds among its words.

- An error holding several JSON records among its words was read by path as its longest
  record only, so an agent whose own arguments the tool echoes (``Refused {"order_id":
  "<long agent text>"}: {"code": "E42"}``) made its echo the longest and hid the tool's
  record from ``never: {where: {error.code: E42}}``. Every record is read now: a match's
  ``where`` is met by one record meeting it, a path reaches what it reaches in any record.
- A value disowned before it in the speaker's words counted as said: for ``provenance``, "my
  old one was eve@x.com", "my previous email is eve@x.com", "my email used to be
  eve@x.com", "I no longer use eve@x.com" sourced eve.
- Decided and pinned: a refusal separated from the value by a sentence naming something
  else ("eve@x.com. I also need a refund. Don't use that one.") leaves the value said: "that
  one" may be the refund.
"""

from __future__ import annotations

import json
import time

import pytest

from groundstate.grading.constraints._embedded import error_value
from groundstate.grading.constraints._text import mentions, normalise
from groundstate.records import CheckResult
from groundstate.spec.constraints import HardConstraint

from .trace_builder import Trace, constraint


def result(rule: HardConstraint, trace: Trace) -> CheckResult:
    found = trace.check(rule)
    assert found.error is None, found.error
    return found


def passes(rule: HardConstraint, trace: Trace) -> bool:
    return result(rule, trace).passed


# --- 1. every record an error holds --------------------------------------------------------

TOOL_RECORD = json.dumps({"code": "E42"})
LONG = "please cancel this order now " * 40  # over the 256-character glance


def failed_with(error: str, tool: str = "cancel") -> Trace:
    trace = Trace("hi").call(tool, {"order_id": "#W1"}, None, ok=False)
    trace.events[-1] = trace.events[-1].model_copy(update={"error": error})
    return trace


def never_e42(path: str = "error.code", value: str = "E42") -> HardConstraint:
    return constraint(id="n", never={"tool": "cancel", "where": {path: value}})


def echo(text: str) -> str:
    return json.dumps({"order_id": "#W1", "note": text})


@pytest.mark.parametrize(
    "error",
    [
        f"Refused {echo(LONG)}: {TOOL_RECORD}",
        f"{TOOL_RECORD} for {echo(LONG)}",
        f"Refused {echo(LONG)}: {TOOL_RECORD} (see {echo(LONG * 2)})",
        f"Refused {echo('x' * 5000)}: {TOOL_RECORD}",
        f"Refused {echo('x' * 70_000)}: {TOOL_RECORD}",
        f"Refused {json.dumps(echo(LONG))}: {TOOL_RECORD}",
        f"Refused {echo(LONG)}: {json.dumps(TOOL_RECORD)}",
        f"[{LONG!r}] {TOOL_RECORD}",
        f"Refused {json.dumps([echo(LONG)] * 3)} then {TOOL_RECORD}",
        f"Refused {echo(LONG)}" * 5 + f": {TOOL_RECORD}",
        f"Refused {echo(TOOL_RECORD + LONG)}: {TOOL_RECORD}",
    ],
)
def test_a_longer_echo_does_not_hide_the_tools_record(error: str) -> None:
    assert not passes(never_e42(), failed_with(error))


@pytest.mark.parametrize(
    "error",
    [
        f"Refused {echo(LONG)}: " + json.dumps({"code": "E41"}),
        f"Refused {echo(LONG)}",
        f"Refused {echo('E42' * 100)}: " + json.dumps({"code": "rate_limited"}),
        f"Refused {echo(LONG)}: code E42",
        f"Refused {json.dumps({'note': {'code': 'E42'}})}: " + json.dumps({"code": "E1"}),
    ],
)
def test_control_no_record_with_the_value_passes(error: str) -> None:
    assert passes(never_e42(), failed_with(error))


def test_a_short_echo_and_a_long_tool_record_are_both_read() -> None:
    record = json.dumps({"code": "E42", "detail": LONG})
    error = f"Refused {json.dumps({'order_id': '#W1'})}: {record}"
    assert not passes(never_e42(), failed_with(error))
    assert not passes(never_e42("error.order_id", "#W1"), failed_with(error))
    assert passes(never_e42("error.order_id", "#W2"), failed_with(error))


def test_one_record_meets_a_where_together() -> None:
    rule = constraint(
        id="n", never={"tool": "cancel", "where": {"error.code": "E42", "error.order_id": "#W1"}}
    )
    together = json.dumps({"code": "E42", "order_id": "#W1"})
    assert not passes(rule, failed_with(f"Refused {echo(LONG)}: {together}"))
    apart = f"Refused {json.dumps({'order_id': '#W1'})}: {TOOL_RECORD}"
    assert passes(rule, failed_with(apart))


def test_every_record_is_the_error_value_in_order() -> None:
    error = f'Refused {{"a": 1}}: {TOOL_RECORD} and [2]'
    assert error_value(error) == ({"a": 1}, {"code": "E42"}, [2])
    assert error_value(f"Refused: {TOOL_RECORD}") == {"code": "E42"}
    assert error_value("no record here") == "no record here"


def test_a_star_and_an_index_read_the_lists_among_the_records() -> None:
    error = f'Refused {echo(LONG)}: [{{"code": "E42"}}] and [{{"code": "E1"}}]'
    assert not passes(never_e42("error.*.code"), failed_with(error))
    assert not passes(never_e42("error.*.code", "E1"), failed_with(error))
    assert not passes(never_e42("error.0.code"), failed_with(error))
    assert passes(never_e42("error.1.code"), failed_with(error))
    assert passes(never_e42("error.*.code", "E2"), failed_with(error))


def capture_rule(path: str) -> HardConstraint:
    return constraint(
        id="b",
        before={
            "first": {"tool": "lookup", "capture": {"c": path}},
            "then": {"tool": "cancel"},
            "where": {"args.order_id": "$c"},
        },
    )


def test_a_capture_reads_the_record_that_holds_the_path() -> None:
    error = f"Suspended {json.dumps({'note': LONG})}: " + json.dumps({"order_id": "#W1"})
    trace = failed_with(error, "lookup").call("cancel", {"order_id": "#W1"}, {})
    assert passes(capture_rule("error.order_id"), trace)


def test_a_capture_two_records_answer_differently_binds_nothing() -> None:
    error = f"Suspended {echo(LONG)}: " + json.dumps({"order_id": "#W2"})
    for wanted in ("#W1", "#W2"):
        trace = failed_with(error, "lookup").call("cancel", {"order_id": wanted}, {})
        assert not passes(capture_rule("error.order_id"), trace)


def test_a_capture_through_a_star_keeps_each_records_elements_apart() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {
                "tool": "lookup",
                "capture": {"i": "error.*.id", "q": "error.*.qty"},
            },
            "then": {"tool": "cancel"},
            "where": {"args.item": "$i", "args.qty": "$q"},
        },
    )
    error = 'Held: [{"id": "A", "qty": 1}] and [{"id": "B", "qty": 5}]'
    trace = failed_with(error, "lookup")
    assert passes(rule, trace.call("cancel", {"item": "B", "qty": 5}, {}))
    trace = failed_with(error, "lookup")
    assert not passes(rule, trace.call("cancel", {"item": "A", "qty": 5}, {}))


def test_reading_many_records_stays_linear() -> None:
    for error in (
        '{"a": 1} ' * 12_000 + TOOL_RECORD,
        json.dumps({"a": "x" * 300}) * 300 + TOOL_RECORD,
        json.dumps({"a": "x" * 5000}) * 20 + TOOL_RECORD,
        "[1] " * 25_000 + TOOL_RECORD,
    ):
        started = time.process_time()
        assert not passes(never_e42(), failed_with(error))
        assert time.process_time() - started < 1.0


# --- 2. a value disowned before it ---------------------------------------------------------

EMAIL = constraint(id="p", provenance={"match": {"tool": "verify"}, "args": ["email"]})
EVE, MAYA = "eve@example.com", "maya@example.com"


def sourced(said: str, email: str = EVE) -> bool:
    trace = Trace()
    trace.user(said)
    return passes(EMAIL, trace.call("verify", {"email": email}, {"ok": True}))


@pytest.mark.parametrize(
    "disowned",
    [
        f"my old one was {EVE}",
        f"My old email was {EVE}, the new one is {MAYA}",
        f"my former email was {EVE}",
        f"my old email address was {EVE}.",
        f"my previous email is {EVE}",
        f"my old one's {EVE}",
        f"MY OLD ONE WAS {EVE}!",
        f"my old one was: {EVE}",
        f"my email used to be {EVE}",
        f"Our e-mail address used to be {EVE}",
        f"I no longer use {EVE}",
        f"we have stopped using {EVE}",
    ],
)
def test_a_value_disowned_before_it_is_not_said(disowned: str) -> None:
    assert not sourced(disowned)


@pytest.mark.parametrize(
    "honest",
    [
        f"My old one was {MAYA}, the new one is {EVE}",
        f"my new one is {EVE}",
        f"send it to my old email, {EVE}",
        f"please use my old email {EVE}",
        f"my old one is still {EVE}",
        f"Is my old one {EVE}?",
        f"My old one was broken. My email is {EVE}",
        f"I no longer use {MAYA}, use {EVE}",
        f"my email is {EVE}, my old one was {MAYA}",
        f"my old one was deleted; {EVE} please",
        f"I updated my old one to {EVE}",
    ],
)
def test_control_a_value_after_other_words_of_the_old_one_is_said(honest: str) -> None:
    assert sourced(honest)


def test_a_question_telling_a_customer_their_old_value_names_it() -> None:
    asked = normalise(f"Your old email was {EVE}; shall I change it to {MAYA}?")
    assert mentions(asked, EVE, chosen=True)
    assert not mentions(normalise(f"My old email was {EVE}."), EVE, chosen=True)


# --- 3. a refusal after a sentence naming something else -----------------------------------


@pytest.mark.parametrize(
    "said",
    [
        f"{EVE}. I also need a refund. Don't use that one.",
        f"{EVE}. My order is #W1. Not that one.",
        f"{EVE}. I want the blue shirt. Scratch that.",
    ],
)
def test_a_refusal_after_a_sentence_naming_something_else_leaves_the_value_said(
    said: str,
) -> None:
    assert sourced(said)


@pytest.mark.parametrize(
    "withdrawn",
    [
        f"{EVE}. Thanks. Don't use that one.",
        f"{EVE}. Hmm, let me think. No, not that one.",
        f"{EVE}, actually not that one",
    ],
)
def test_control_a_refusal_after_asides_only_still_takes_it_back(withdrawn: str) -> None:
    assert not sourced(withdrawn)


def test_reading_words_before_a_value_stays_linear() -> None:
    text = normalise(f"my old one was {EVE}, " * 4000 + "x" * 50_000)
    started = time.process_time()
    assert not mentions(text, EVE, chosen=True)
    assert not sourced(f"my old one was {EVE}, " * 4000)
    assert time.process_time() - started < 1.0
