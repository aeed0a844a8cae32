"""Constraints, fifty-first round: values taken back in other words, JSON among words in an
error, JSON text compared whole.

- A value given and then taken back without naming it again still counted as said: for
  ``provenance``, "eve@x.com. No, don't use that one.", "eve@x.com, actually not that
  one", "eve@x.com. Scratch that.", "eve@x.com. That's my old one." and "eve@x.com. Sorry,
  I meant maya@x.com." sourced eve. Words taking it back, in its sentence or the next one,
  are read now; "eve@x.com. Yes, that's right.", "eve@x.com. Don't use it for marketing.",
  "eve@x.com. Use it instead of my phone." and "eve@x.com. No thanks, that's all." still
  say it.
- JSON text in a tool's error with words after it (``{"code": "E42"} while updating``), or
  after a bracketed word (``[404] {"code": ...}``), or a list among words (``Errors:
  [{...}]``) was not readable by a path below ``error``.
- JSON text a condition compares whole (``where: {error: '{"code": "E42"}'}``,
  ``args.payload: '{...}'``) was compared as a string: the same value spaced otherwise, or
  its keys in another order, missed (a ``never`` an agent dodged by re-spacing its JSON).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from groundstate.gateway import MAX_ARGUMENT_CHARS
from groundstate.grading.constraints._embedded import error_value
from groundstate.grading.constraints._text import mentions, normalise
from groundstate.spec.constraints import HardConstraint

from .trace_builder import EMAIL, EVE, MAYA, Trace, constraint, passes, verified

# --- 1. a value taken back in other words ---------------------------------------------------


@pytest.mark.parametrize(
    "withdrawn",
    [
        f"{EVE}. No, don't use that one.",
        f"{EVE}. Actually, not that one.",
        f"{EVE}, actually not that one",
        f"{EVE} \u2014 wait, no, not that one",
        f"{EVE}. Scratch that.",
        f"{EVE}. Sorry, I meant {MAYA}.",
        f"{EVE}. Wait, use {MAYA} instead.",
        f"{EVE}. That's my old one.",
        f"{EVE}. I'd rather not use that one.",
        f"{EVE}.\nNO, DON'T USE THAT ONE!",
        f"{EVE}. Hmm, on second thought, don't use that address.",
        f"{EVE}. Don't use it anymore.",
        f"{EVE}! Never mind that one.",
        f"{EVE}. Forget that.",
        f"{EVE}? Actually no, not that one",
        f"{EVE}. That one's outdated.",
        f"{EVE}. Please don\u2019t use this email.",
        f"My email is {EVE}. Oops, I meant my other one: {MAYA}",
    ],
)
def test_a_value_taken_back_after_it_is_not_said(withdrawn: str) -> None:
    said = [withdrawn, f"Use {MAYA}"]
    assert not passes(EMAIL, verified(said, EVE))
    assert passes(EMAIL, verified(said, MAYA))


@pytest.mark.parametrize(
    "honest",
    [
        f"{EVE}. Yes, that's right.",
        f"My email is {EVE}. No thanks, that's all.",
        f"It's {EVE}. No, I'd rather not get the newsletter.",
        f"{EVE}. Don't use it for marketing.",
        f"{EVE}. Use it instead of my phone.",
        f"{EVE}. Use it instead.",
        f"{EVE}. Don't lose it!",
        f"{EVE}. Don't cancel that order.",
        f"{EVE}. Cancel that order please.",
        f"{EVE}. Not that it matters.",
        f"{EVE}. No, I don't have another.",
        f"{EVE}. Actually, that's the one.",
        f"{EVE}. I meant to ask about my order too.",
        f"{EVE}. No, don't use the old one.",
        f"{EVE}. Don't forget that.",
        f"{EVE}. Never mind that, what about my refund?",
        f"{EVE}. Don't charge my other card.",
        f"{EVE}. That's the one I use.",
        f"{EVE}, not {MAYA}. Don't use that one.",
        f"{EVE}. Don't change it.",
        f"{EVE}. Oh, and don't ship it to my office.",
        f"{EVE}. Use the same one instead of asking.",
    ],
)
def test_control_a_value_followed_by_other_words_is_said(honest: str) -> None:
    assert passes(EMAIL, verified([honest], EVE))


def test_reading_what_follows_a_value_stays_linear() -> None:
    for text in (
        f"{EVE}. actually, wait, no, hmm, " * 3500,
        f"{EVE}. " + "actually " * 12_000 + "sure",
        f"{EVE}. use " + "a " * 50_000,
    ):
        started = time.process_time()
        mentions(normalise(text), EVE, chosen=True)
        assert time.process_time() - started < 1.0


# --- 2. JSON text among words in an error ---------------------------------------------------


def failed_with(error: str, tool: str = "cancel", args: dict[str, Any] | None = None) -> Trace:
    trace = Trace("hi").call(tool, args or {"order_id": "#W1"}, None, ok=False)
    trace.events[-1] = trace.events[-1].model_copy(update={"error": error})
    return trace


def not_found(path: str = "error.code") -> HardConstraint:
    return constraint(id="n", never={"tool": "cancel", "where": {path: "not_found"}})


@pytest.mark.parametrize(
    "error",
    [
        '{"code": "not_found"} while updating',
        'Refused: {"code": "not_found"} (and more)',
        '[404] {"code": "not_found"}',
        'tool error [E42]: {"code":"not_found", "detail": {"id": [1, 2]}} retry later',
        'Template {name} failed: {"code": "not_found"}',
        '{"code": "not_found"}\n\nTraceback (most recent call last): ...',
        "[E1] [E2] [E3] [E4] [E5] [E6] [E7] [E8] [E9] [E10] " + '{"code": "not_found"}',
        "a{b{c{d{e{f{g{h{i{j{ " + '{"code": "not_found"}',
        '[1] [2] [3] [4] [5] [6] [7] [8] [9] {"code": "not_found", "why": "' + "x" * 300 + '"}',
    ],
)
def test_json_text_among_words_in_an_error_is_read(error: str) -> None:
    assert not passes(not_found(), failed_with(error))


@pytest.mark.parametrize(
    "error",
    [
        '{"code": "rate_limited"} while updating',
        "Order {W1} not found",
        "[not_found] no such order",
        '{"code": "not_found" truncated',
        '{"error": {"code": "not_found"}} while updating',
    ],
)
def test_control_an_error_holding_no_such_value_among_words_passes(error: str) -> None:
    assert passes(not_found(), failed_with(error))


def test_nested_json_and_lists_among_words_are_read() -> None:
    error = 'Errors: [{"code": "not_found", "at": {"order": "#W1"}}] see the docs'
    assert not passes(not_found("error.0.code"), failed_with(error))
    assert not passes(not_found("error.*.code"), failed_with(error))
    nested = 'Failed: {"error": {"code": "not_found"}} (attempt 2)'
    assert not passes(not_found("error.error.code"), failed_with(nested))
    assert passes(not_found("error.code"), failed_with(nested))


def test_every_json_in_an_error_is_a_record() -> None:
    # Round 53: every record is read, not the longest (an echo must not hide the tool's).
    assert error_value('[1] {"code": "x", "n": 2}') == ([1], {"code": "x", "n": 2})
    assert error_value('Errors: [{"code": "E1"}, {"code": "E2"}] {"a": 1}') == (
        [{"code": "E1"}, {"code": "E2"}],
        {"a": 1},
    )


def test_a_capture_reads_json_with_words_after_it() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {"tool": "lookup", "capture": {"c": "error.customer_id"}},
            "then": {"tool": "get_orders"},
            "where": {"args.customer_id": "$c"},
        },
    )
    error = '{"customer_id": "C-1"} is suspended'
    trace = failed_with(error, "lookup", {"q": "maya"})
    assert passes(rule, trace.call("get_orders", {"customer_id": "C-1"}, []))
    trace = failed_with(error, "lookup", {"q": "maya"})
    assert not passes(rule, trace.call("get_orders", {"customer_id": "C-2"}, []))


def test_reading_a_long_error_stays_linear_and_bounded() -> None:
    long = "x" * 100_000 + ' {"code": "not_found"} ' + "y {" * 30_000
    started = time.process_time()
    assert not passes(not_found(), failed_with(long))
    assert time.process_time() - started < 1.0
    started = time.process_time()
    assert passes(not_found(), failed_with("{[" * 50_000))
    assert time.process_time() - started < 1.0
    for noise in ("x {", "{ ", "[E1] ", '{"a": 1} ', "[404] "):
        started = time.process_time()
        assert not passes(not_found(), failed_with(noise * 30_000 + '{"code": "not_found"}'))
        assert time.process_time() - started < 1.0
    for noise in ('{"', "[1 "):  # openings almost JSON: each read within the glance
        started = time.process_time()
        failed_with(noise * 50_000 + '{"code": "not_found"}').check(not_found())
        assert time.process_time() - started < 1.0


def test_an_error_too_large_to_read_among_words_fails_a_check_below_it() -> None:
    error = 'Refused: {"code": "x", "pad": "' + "a" * MAX_ARGUMENT_CHARS + '"} and more'
    found = failed_with(error).check(not_found())
    assert not found.passed
    assert "error" in json.dumps(found.evidence)


# --- 3. JSON text compared whole ------------------------------------------------------------

RECORD = {"code": "not_found", "order_id": "#W1"}


def never_error(text: str) -> HardConstraint:
    return constraint(id="n", never={"tool": "cancel", "where": {"error": text}})


@pytest.mark.parametrize(
    "error",
    [
        json.dumps(RECORD),
        json.dumps(RECORD, separators=(",", ":")),
        json.dumps(RECORD, indent=2),
        json.dumps(dict(reversed(RECORD.items()))),
        json.dumps(json.dumps(RECORD)),
    ],
)
def test_an_error_compared_whole_is_the_value_its_json_encodes(error: str) -> None:
    assert not passes(never_error(json.dumps(RECORD)), failed_with(error))
    assert not passes(never_error('{"order_id":"#W1","code":"not_found"}'), failed_with(error))


@pytest.mark.parametrize(
    "error",
    [
        json.dumps({**RECORD, "order_id": "#W2"}),
        json.dumps({**RECORD, "extra": 1}),
        json.dumps([RECORD]),
        f"Refused: {json.dumps(RECORD)}",
        "not_found",
    ],
)
def test_control_an_error_of_another_value_is_not_the_one_compared(error: str) -> None:
    assert passes(never_error(json.dumps(RECORD)), failed_with(error))


def test_a_plain_error_still_compares_its_text() -> None:
    assert not passes(never_error("not_found"), failed_with("not_found"))
    assert passes(never_error("not_found"), failed_with("Not_found"))
    assert passes(never_error("{not json}"), failed_with("{not  json}"))


def test_an_argument_compared_whole_is_the_value_its_json_encodes() -> None:
    rule = constraint(
        id="n", never={"tool": "refund", "where": {"args.payload": json.dumps(RECORD)}}
    )
    for sent in (json.dumps(RECORD, indent=1), RECORD, json.dumps(json.dumps(RECORD))):
        assert not passes(rule, Trace("hi").call("refund", {"payload": sent}, {}))
    other = json.dumps({**RECORD, "order_id": "#W2"})
    assert passes(rule, Trace("hi").call("refund", {"payload": other}, {}))


def test_an_output_compared_whole_is_the_value_its_json_encodes() -> None:
    rule = constraint(id="n", never={"tool": "get", "where": {"output.raw": '{"a": [1, 2]}'}})
    assert not passes(rule, Trace("hi").call("get", {}, {"raw": '{ "a":[1,2] }'}))
    assert not passes(rule, Trace("hi").call("get", {}, {"raw": {"a": [1, 2]}}))
    assert passes(rule, Trace("hi").call("get", {}, {"raw": '{"a": [2, 1]}'}))
