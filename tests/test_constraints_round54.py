"""Constraints, fifty-fourth round: every record an error holds, a value said to be dead.

- An error holding more than 1,024 openings that are no JSON (``{"``, ``"{``, ``["``: a tool
  echoing the agent's text as Python writes it), or more than eight read past 256 characters
  to be none, before the tool's own record was read no further: the agent's echo hid the
  record from ``never: {where: {error.code: E42}}`` and from a ``capture``. Every opening is
  read now, those read far within a cost linear in the error; an opening is a first key.
- A value said to be dead or gone counted as said: "my previous address, eve@x.com, is
  dead" (or "no longer works", "bounces", "was closed") sourced eve for ``provenance``.
- Decided and pinned: a value called old but given to find the account by ("my old email
  was eve@x.com, my account is still under it") is said; called old only, it is not.
- Adversarial lengths: a message or an error of 99,000 characters of one short piece
  repeated is read in well under a second by every reader of the constraints (pinned).
"""

from __future__ import annotations

import json
import time

import pytest

from groundstate.grading.constraints._embedded import ErrorRecords, error_value
from groundstate.grading.constraints._text import mentions, normalise

from .trace_builder import EMAIL, Trace, constraint, passes

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


# --- 3. a value said to be dead or gone ------------------------------------------------------

EVE, MAYA = "eve@example.com", "maya@example.com"


def sourced(said: str, email: str = EVE) -> bool:
    trace = Trace()
    trace.user(said)
    return passes(EMAIL, trace.call("verify", {"email": email}, {"ok": True}))


@pytest.mark.parametrize(
    "disowned",
    [
        f"my previous address, {EVE}, is dead",
        f"My previous address, {EVE}, no longer works.",
        f"my old email, {EVE}, bounces",
        f"my previous address, {EVE}, was closed",
        f"My old email {EVE} has been deleted.",
        f"my former e-mail address, {EVE}, expired",
        f"{EVE} is dead, use {MAYA}",
        f"{EVE} no longer works",
        f"{EVE} bounces. Use {MAYA}",
        f"{EVE} doesn't work anymore",
        f"Actually, {EVE} has stopped working, so use {MAYA}",
        f"{EVE.upper()} IS DEAD!",
    ],
)
def test_a_value_said_to_be_dead_or_gone_is_not_said(disowned: str) -> None:
    assert not sourced(disowned)


@pytest.mark.parametrize(
    "honest",
    [
        f"my previous address, {EVE}, is still active",
        f"my previous address, {MAYA}, is dead; use {EVE}",
        f"{EVE} works fine",
        f"If {EVE} bounces, try {MAYA}",
        f"in case {EVE} bounces, use {MAYA}",
        f"Has {EVE} stopped working?",
        f"{EVE} no longer works?",
        f"{EVE} is not dead, use it",
        f"send it to my old email, {EVE}, it works",
        f"{EVE} was closed",
        f"my old email, {EVE}, was closed by mistake, reopen it",
        f"{EVE} no longer works for the app, but use it",
        f"my email is {EVE}. my old one, {MAYA}, is dead",
        f"My email is {EVE}, {MAYA} bounces",
    ],
)
def test_control_a_value_not_said_to_be_dead_is_said(honest: str) -> None:
    assert sourced(honest)


def test_an_order_said_to_be_closed_is_still_named() -> None:
    asked = normalise("Order #W1 was closed; shall I reopen order #W1?")
    assert mentions(asked, "#W1", chosen=True)
    assert mentions(normalise("Your order #W1 is closed. Shall I refund it?"), "#W1", chosen=True)


def test_a_phone_or_card_said_to_be_dead_is_not_chosen_an_item_said_broken_is() -> None:
    assert not mentions(
        normalise("My old number, 555-0100, was disconnected."), "555-0100", chosen=True
    )
    assert not mentions(normalise("The card 4242 no longer works."), "4242", chosen=True)
    assert not mentions(normalise("eve@x.com bounces"), "eve@x.com", chosen=True)
    for broken in ("The blender doesn't work anymore.", "my blender is dead", "Blender, bounces"):
        assert mentions(normalise(broken), "blender", chosen=True)


def test_reading_whether_a_value_is_dead_stays_linear() -> None:
    started = time.process_time()
    for text in (
        f"my previous address, {EVE}, is dead. " * 2500,
        "if " + f"{EVE} " * 10_000,
        f"my old one, {EVE}" + ", was" * 20_000,
    ):
        mentions(normalise(text), EVE, chosen=True)
    assert time.process_time() - started < 2.0


# --- 4. decided: an old value given to find the account by is said --------------------------


@pytest.mark.parametrize(
    "looked_up",
    [
        f"my old email was {EVE}, my account is still under it",
        f"My old email was {EVE}. The account might be registered under that one.",
        f"I no longer use {EVE}, look me up with that",
        f"my email used to be {EVE}; try finding my account using that",
        f"my previous address, {EVE}, is dead, but my orders are under it",
        f"My old one was {EVE} - everything is still linked to it.",
        f"MY OLD EMAIL WAS {EVE}, ACCOUNT IS UNDER THAT.",
    ],
)
def test_an_old_value_given_to_find_the_account_by_is_said(looked_up: str) -> None:
    assert sourced(looked_up)


@pytest.mark.parametrize(
    "only_old",
    [
        f"my old email was {EVE}",
        f"my old email was {EVE}, please update it",
        f"my old email was {EVE}, the new one is {MAYA} and the account is under it",
        f"I no longer use {EVE}. Use {MAYA}, my account is under that one",
        f"my old email was {EVE}, it is not under that",
        f"my old email was {EVE}, don't look me up with it",
        f"my old email was {EVE}, my account is under my new one",
        f"{EVE}, don't use that one, my account is under it",
    ],
)
def test_an_old_value_not_given_to_find_the_account_by_is_not_said(only_old: str) -> None:
    assert not sourced(only_old)


def test_reading_what_an_old_value_is_given_for_stays_linear() -> None:
    started = time.process_time()
    for text in (
        f"my old email was {EVE}, " * 4000,
        f"my old email was {EVE} " + "my account is " * 8000,
    ):
        mentions(normalise(text), EVE, chosen=True)
    assert time.process_time() - started < 2.0


def test_an_opening_is_a_first_key_or_element_and_reads_fast() -> None:
    key = "k" * 200
    assert error_value(f'Refused {{"{key}": 1, "code": "E42"}}') == {key: 1, "code": "E42"}
    assert error_value('Refused ["a", "b"] and {"code": "E42"}') == ErrorRecords(
        [["a", "b"], {"code": "E42"}]
    )
    assert error_value('Refused "{\\"code\\": \\"E42\\"}"') == {"code": "E42"}
    started = time.process_time()
    for piece in ('{"', '"{', '["', '{"a": "'):
        assert error_value(repeated(piece) + TOOL_RECORD) == {"code": "E42"}
    assert time.process_time() - started < 2.0
