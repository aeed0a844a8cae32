"""Constraints, fifty-fourth round: every record an error holds, however many openings before.

- An error holding more than 1,024 openings that are no JSON (``{"``, ``"{``, ``["``: a tool
  echoing the agent's text as Python writes it), or more than eight read past 256 characters
  to be none, before the tool's own record was read no further: the agent's echo hid the
  record from ``never: {where: {error.code: E42}}`` and from a ``capture``. Every opening is
  read now, those read far within a cost linear in the error.
- Adversarial lengths: a message or an error of 99,000 characters of one short piece
  repeated is read in well under a second by every reader of the constraints (pinned).
"""

from __future__ import annotations

import json
import time

import pytest

from groundstate.grading.constraints._embedded import ErrorRecords, error_value
from groundstate.records import CheckResult
from groundstate.spec.constraints import HardConstraint

from .trace_builder import Trace, constraint


def result(rule: HardConstraint, trace: Trace) -> CheckResult:
    found = trace.check(rule)
    assert found.error is None, found.error
    return found


def passes(rule: HardConstraint, trace: Trace) -> bool:
    return result(rule, trace).passed


# --- 1. every record an error holds, after any number of openings ---------------------------

TOOL_RECORD = json.dumps({"code": "E42"})
NEVER_E42 = constraint(id="n", never={"tool": "cancel", "where": {"error.code": "E42"}})
CAPTURE = constraint(
    id="b",
    before={
        "first": {"tool": "lookup", "capture": {"c": "error.code"}},
        "then": {"tool": "cancel"},
        "where": {"args.code": "$c"},
    },
)


def failed_with(error: str, tool: str = "cancel") -> Trace:
    trace = Trace("hi").call(tool, {"order_id": "#W1"}, None, ok=False)
    trace.events[-1] = trace.events[-1].model_copy(update={"error": error})
    return trace


def repr_echo(text: str) -> str:
    """The agent's text as a tool echoing it with Python's ``repr`` writes it: no JSON."""
    return f"Refused {{'note': {text!r}}}"


FAR = '{"a": "' + "x" * 300 + '" x '  # an opening read past the glance to be no JSON
ECHOES = [
    repr_echo('{"' * 2000),
    repr_echo('"{' * 2000),
    repr_echo('["' * 2000),
    repr_echo('{"a": "' * 600),
    repr_echo('{"a": {"' * 600),
    repr_echo('"{\\"' * 1500),
    '{"' * 30_000,
    FAR * 12,
    FAR * 200,
    '{"a": "' + '\\"{' * 3000,
    "[1 " * 2000 + FAR * 20,
]


@pytest.mark.parametrize("echo", ECHOES)
def test_many_openings_before_the_tools_record_do_not_hide_it(echo: str) -> None:
    for error in (f"{echo}: {TOOL_RECORD}", f"{echo}: {json.dumps(TOOL_RECORD)}"):
        assert not passes(NEVER_E42, failed_with(error))


@pytest.mark.parametrize("echo", ECHOES[:6] + ECHOES[7:9])
def test_a_record_between_two_echoes_is_read(echo: str) -> None:
    assert not passes(NEVER_E42, failed_with(f"{echo}: {TOOL_RECORD} ({echo})"))


@pytest.mark.parametrize("echo", [ECHOES[0], ECHOES[6], ECHOES[8]])
def test_a_capture_reads_the_record_after_the_openings(echo: str) -> None:
    trace = failed_with(f"{echo}: {TOOL_RECORD}", "lookup")
    assert passes(CAPTURE, trace.call("cancel", {"code": "E42"}, {}))
    trace = failed_with(f"{echo}: {TOOL_RECORD}", "lookup")
    assert not passes(CAPTURE, trace.call("cancel", {"code": "E43"}, {}))


def test_a_long_record_after_many_openings_is_read() -> None:
    record = json.dumps({"code": "E42", "detail": "d" * 2000})
    for echo in (repr_echo('{"' * 2000), FAR * 40):
        assert not passes(NEVER_E42, failed_with(f"{echo}: {record}"))


def test_the_record_after_openings_is_the_error_value_alone() -> None:
    assert error_value(repr_echo('{"' * 2000) + f": {TOOL_RECORD}") == {"code": "E42"}
    assert error_value(FAR * 20 + f"{TOOL_RECORD} {TOOL_RECORD}") == ErrorRecords(
        [{"code": "E42"}, {"code": "E42"}]
    )


@pytest.mark.parametrize("echo", ECHOES)
def test_control_openings_without_the_value_pass(echo: str) -> None:
    assert passes(NEVER_E42, failed_with(f"{echo}: " + json.dumps({"code": "E41"})))
    assert passes(NEVER_E42, failed_with(echo))


def test_a_record_too_large_after_many_openings_fails_the_check() -> None:
    record = '{"code": "E42", "pad": "' + "a" * 1_100_000 + '"}'
    found = failed_with(repr_echo('{"' * 2000) + record).check(NEVER_E42)
    assert not found.passed


# --- 2. adversarial lengths -----------------------------------------------------------------

PIECES = [
    '{"',
    '{"a": ',
    "[",
    '"\\"',
    ", ",
    "I no longer use ",
    "x@y.com ",
    "don't use that one. ",
    "Actually, ",
    "| ",
    "$1, ",
    "Yes, ",
    "\n- ",
    "(",
    "**",
    '"{',
    '["',
    '{"a": "',
    '"{\\"',
    "my old one was ",
    "eve@x.com. ",
]
EMAIL = constraint(id="p", provenance={"match": {"tool": "verify"}, "args": ["email"]})
NEVER_PAYLOAD = constraint(id="a", never={"tool": "cancel", "where": {"args.payload.code": "E42"}})
SAYS = constraint(id="s", never={"message": "agent", "contains": "refund"})


def repeated(piece: str, length: int = 99_000) -> str:
    return (piece * (length // len(piece) + 1))[:length]


@pytest.mark.parametrize("piece", PIECES)
def test_a_long_repeated_piece_is_read_in_linear_time(piece: str) -> None:
    text = repeated(piece)
    traces = [
        (EMAIL, Trace().user(text).call("verify", {"email": "eve@x.com"}, {"ok": True})),
        (EMAIL, Trace().user(f"{text} eve@x.com").call("verify", {"email": "eve@x.com"}, {})),
        (NEVER_E42, failed_with(text + TOOL_RECORD)),
        (NEVER_E42, failed_with(TOOL_RECORD + text + TOOL_RECORD)),
        (CAPTURE, failed_with(text + TOOL_RECORD, "lookup").call("cancel", {"code": "E42"})),
        (NEVER_PAYLOAD, Trace("hi").call("cancel", {"payload": text}, {})),
        (SAYS, Trace("hi").agent(text)),
    ]
    started = time.process_time()
    for rule, trace in traces:
        trace.check(rule)
    assert time.process_time() - started < 5.0
