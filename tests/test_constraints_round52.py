"""Constraints, fifty-second round: values disowned further away, "I mean" affirming what was
said, JSON text encoded twice among words, keys that collide.

- A value taken back further from it still counted as said: for ``provenance``,
  "eve@x.com is one I'd rather not use", "eve@x.com, which I no longer use", "eve@x.com is
  my old one" (in its own sentence, after it), and "eve@x.com. Thanks. Actually, don't use
  that one." (a sentence naming nothing between) sourced eve.
- An "I mean" pointing back at what was said was read as a correction: "eve@x.com. I meant
  what I said." and "eve@x.com, I mean, that's the one" dropped eve.
- JSON text encoded as a JSON string again among words in an error (``Refused:
  "{\\"code\\": \\"E42\\"}"``), or a message among the error's own record holding the record
  among words (``{"message": "Refused: {\\"code\\": ...}"}``), was not read by path.
- Keys that collide: JSON text compared whole with a key it repeats (``{"order_id": "#W2",
  "order_id": "#W1"}``) dodged a ``never`` on ``{"order_id": "#W1"}`` (a parser taking the
  last value acts on #W1); a key written with a dot (``{"order.id": "#W1"}``, an argument a
  tool declares so) was never reached by ``args.order.id``, and beside a nested ``order``
  one reading of the two hid the other.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from groundstate.grading.constraints._embedded import error_value
from groundstate.grading.constraints._text import mentions, normalise, reply_words
from groundstate.spec.constraints import HardConstraint

from .trace_builder import EMAIL, EVE, MAYA, Trace, constraint, passes, verified

# --- 1. a value disowned further away ------------------------------------------------------


@pytest.mark.parametrize(
    "withdrawn",
    [
        f"{EVE} is one I'd rather not use",
        f"{EVE} is the one I'd rather not use.",
        f"{EVE} is one I don't want you to use anymore",
        f"{EVE}, which I no longer use.",
        f"{EVE}, which I'd rather you didn't use",
        f"{EVE} is my old one",
        f"{EVE} was my old address, sorry",
        f"{EVE} is outdated.",
        f"{EVE} is no longer valid",
        f"{EVE} isn't valid anymore",
        f"{EVE} is not mine",
        f"{EVE} IS ONE I'D RATHER NOT USE!",
        f"{EVE}. Hmm. Actually no, not that one.",
        f"{EVE}. Hmm... Actually no, not that one.",
        f"{EVE}. Thanks. Actually, don't use that one.",
        f"{EVE}. Hmm, let me think. No, not that one.",
        f"{EVE}. One sec. Thanks! Scratch that.",
        f"{EVE}. My bad. Wait, use {MAYA} instead.",
    ],
)
def test_a_value_disowned_further_away_is_not_said(withdrawn: str) -> None:
    said = [withdrawn, f"Use {MAYA}"]
    assert not passes(EMAIL, verified(said, EVE))
    assert passes(EMAIL, verified(said, MAYA))


@pytest.mark.parametrize(
    "honest",
    [
        f"{EVE}. Thanks. Yes that's the one",
        f"{EVE}. Thanks! That's the one I use.",
        f"{EVE} is the one I use",
        f"{EVE} is one I'd rather use",
        f"{EVE} is the one I'd rather use.",
        f"{EVE} is one I'd rather not use for marketing",
        f"{EVE} is one I'd rather not share publicly",
        f"{EVE} is one I don't use much, but it's fine",
        f"{EVE}, which I use for everything.",
        f"{EVE}, which I never use for shopping, is fine",
        f"{EVE} is my new one",
        f"{EVE} is not my old one",
        f"{EVE} isn't my old one, it's new",
        f"{EVE} is not wrong",
        f"{EVE} is valid",
        f"{EVE} is the right one",
        f"{EVE} is no longer my work email but it's fine",
        f"{EVE}. Thanks. Not that it matters.",
        f"{EVE}. Thanks. Don't forget that.",
        f"{EVE}. My phone is 555-0100. Don't use that one.",
        f"{EVE}, not {MAYA} which I no longer use",
        f"{EVE}. I also have {MAYA}. Don't use that one.",
    ],
)
def test_control_a_value_followed_by_other_words_is_said(honest: str) -> None:
    assert passes(EMAIL, verified([honest], EVE))


@pytest.mark.parametrize(
    "question",
    [
        "Order #W1 is closed, shall I reopen it?",
        "Order #W1 is inactive. Shall I cancel it?",
        "Order #W1, which is delivered, can be returned. Shall I?",
        "Order #W1 is the one I'll refund, okay?",
    ],
)
def test_control_a_state_of_a_record_after_it_names_it(question: str) -> None:
    assert mentions(normalise(question), "#W1", chosen=True)


# --- 2. "I mean" affirming what was said ---------------------------------------------------


@pytest.mark.parametrize(
    "affirmed",
    [
        f"{EVE}. I meant what I said.",
        f"{EVE}, I mean, that's the one",
        f"{EVE}. I mean, that's right.",
        f"{EVE}. I meant that.",
        f"{EVE}. Sorry, I meant exactly that",
        f"{EVE}. I meant what I wrote",
        f"{EVE} - I mean this one!",
        f"{EVE}. i mean that's it",
        f"{EVE}. I mean it.",
        f"{EVE}. I meant the same one.",
    ],
)
def test_an_i_mean_pointing_back_affirms_the_value(affirmed: str) -> None:
    assert passes(EMAIL, verified([affirmed], EVE))


@pytest.mark.parametrize(
    "corrected",
    [
        f"{EVE}, I mean {MAYA}",
        f"{EVE}. Sorry, I meant {MAYA}.",
        f"{EVE}. I meant that {MAYA} is right",
        f"{EVE}. I meant exactly {MAYA}",
    ],
)
def test_an_i_mean_naming_another_value_still_corrects(corrected: str) -> None:
    assert not passes(EMAIL, verified([corrected], EVE))
    assert passes(EMAIL, verified([corrected], MAYA))


@pytest.mark.parametrize(
    ("said", "read"),
    [
        ("Yes, I mean no.", "no."),
        ("The gift card, sorry, I meant the Visa", "the visa"),
        ("Yes. I meant what I said.", "yes. i meant what i said."),
        ("Yes, I mean, that's right", "yes, i mean, that's right"),
        ("Yes, I mean it!", "yes, i mean it!"),
    ],
)
def test_reply_words_keep_an_affirming_i_mean(said: str, read: str) -> None:
    assert reply_words(said) == read


# --- 3. JSON text encoded twice among words ------------------------------------------------

RECORD = json.dumps({"code": "not_found", "order_id": "#W1"})


def failed_with(error: str, tool: str = "cancel") -> Trace:
    trace = Trace("hi").call(tool, {"order_id": "#W1"}, None, ok=False)
    trace.events[-1] = trace.events[-1].model_copy(update={"error": error})
    return trace


def not_found(path: str = "error.code") -> HardConstraint:
    return constraint(id="n", never={"tool": "cancel", "where": {path: "not_found"}})


@pytest.mark.parametrize(
    "error",
    [
        f"Refused: {json.dumps(RECORD)}",
        f"{json.dumps(RECORD)} while updating",
        f"[404] {json.dumps(RECORD)} (retry later)",
        f"ToolError: {json.dumps(json.dumps(RECORD))}",
        "x" * 300 + f" {json.dumps(RECORD)}",
        f"Refused: {json.dumps(json.dumps(RECORD, indent=2))} see the docs",
    ],
)
def test_json_encoded_twice_among_words_is_read(error: str) -> None:
    assert not passes(not_found(), failed_with(error))
    assert passes(not_found("error.order_id"), failed_with(error))


@pytest.mark.parametrize(
    "error",
    [
        'Refused: "{not json}" for order #W1',
        'Refused: "not_found" for order #W1',
        'Template "{name}" failed',
        f"Refused: {json.dumps(json.dumps({'code': 'rate_limited'}))}",
        'Refused: "[1, 2"',
    ],
)
def test_control_quoted_text_that_holds_no_such_record_passes(error: str) -> None:
    assert passes(not_found(), failed_with(error))


def test_the_record_encoded_twice_is_the_error_value() -> None:
    assert error_value(f"Refused: {json.dumps(RECORD)}") == json.loads(RECORD)
    assert error_value('"{x}" then {"code": 1}') == {"code": 1}


@pytest.mark.parametrize(
    "error",
    [
        json.dumps({"message": f"Refused: {RECORD}"}),
        json.dumps({"message": f"Refused: {json.dumps(RECORD)} retry"}),
        f"Failed: {json.dumps({'message': f'{RECORD} while updating'})}",
    ],
)
def test_a_message_in_the_error_record_holding_the_record_among_words_is_read(
    error: str,
) -> None:
    assert not passes(not_found("error.message.code"), failed_with(error))
    assert passes(not_found("error.message.order_id"), failed_with(error))
    assert passes(not_found("error.code"), failed_with(error))


def test_a_capture_reads_a_message_in_the_error_record() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {"tool": "lookup", "capture": {"c": "error.message.order_id"}},
            "then": {"tool": "cancel"},
            "where": {"args.order_id": "$c"},
        },
    )
    error = json.dumps({"message": f"Suspended: {RECORD}"})
    trace = failed_with(error, "lookup")
    assert passes(rule, trace.call("cancel", {"order_id": "#W1"}, {}))
    trace = failed_with(error, "lookup")
    assert not passes(rule, trace.call("cancel", {"order_id": "#W2"}, {}))


# --- 4. keys that collide ------------------------------------------------------------------

PAYLOAD = '{"order_id": "#W1"}'
NEVER_PAYLOAD = constraint(id="n", never={"tool": "refund", "where": {"args.payload": PAYLOAD}})


@pytest.mark.parametrize(
    "sent",
    [
        '{"order_id": "#W2", "order_id": "#W1"}',
        '{"order_id": "#W1", "order_id": "#W2"}',
        '{"order_id":"#W2","order_id":"#W3","order_id":"#W1"}',
        json.dumps('{"order_id": "#W2", "order_id": "#W1"}'),
    ],
)
def test_a_key_repeated_in_json_compared_whole_does_not_dodge_a_never(sent: str) -> None:
    assert not passes(NEVER_PAYLOAD, Trace("hi").call("refund", {"payload": sent}, {}))


@pytest.mark.parametrize(
    "sent", ['{"order_id": "#W2", "order_id": "#W3"}', '{"order_id": "#W2"}', '{"order": "#W1"}']
)
def test_control_json_of_another_value_meets_no_never(sent: str) -> None:
    assert passes(NEVER_PAYLOAD, Trace("hi").call("refund", {"payload": sent}, {}))


def licensed_payload(sent: str) -> bool:
    rule = constraint(
        id="b",
        before={
            "first": {"tool": "get", "capture": {"p": "output.payload"}},
            "then": {"tool": "refund"},
            "where": {"args.payload": "$p"},
        },
    )
    trace = Trace("hi").call("get", {}, {"payload": PAYLOAD})
    return passes(rule, trace.call("refund", {"payload": sent}, {}))


def test_a_key_repeated_is_licensed_only_where_every_reading_is() -> None:
    assert not licensed_payload('{"order_id": "#W2", "order_id": "#W1"}')
    assert not licensed_payload('{"order_id": "#W1", "order_id": "#W2"}')
    assert licensed_payload('{"order_id": "#W1", "order_id": "#W1"}')
    assert licensed_payload('{ "order_id":"#W1" }')


def test_a_match_on_arguments_reads_every_value_a_key_repeats() -> None:
    rule = constraint(id="n", never={"tool": "refund", "args": {"payload": {"order_id": "#W1"}}})
    sent = '{"order_id": "#W2", "order_id": "#W1"}'
    assert not passes(rule, Trace("hi").call("refund", {"payload": sent}, {}))


NEVER_DOTTED = constraint(id="n", never={"tool": "refund", "where": {"args.order.id": "#W1"}})


@pytest.mark.parametrize(
    "args",
    [
        {"order.id": "#W1"},
        {"order": {"id": "#W2"}, "order.id": "#W1"},
        {"order.id": "#W2", "order": {"id": "#W1"}},
        {"order": {"id": "#W1"}},
        {"order": '{"id": "#W1"}'},
        {"payload": "x", "order.id": "#W1"},
    ],
)
def test_a_key_written_with_a_dot_is_reached_by_its_path(args: dict[str, Any]) -> None:
    assert not passes(NEVER_DOTTED, Trace("hi").call("refund", args, {}))


@pytest.mark.parametrize(
    "args",
    [
        {"order.idx": "#W1"},
        {"order.id.x": "#W1"},
        {"orders.id": "#W1"},
        {"order": {"id": "#W2"}},
        {"order": {"id": "#W2"}, "order.id": "#W3"},
        {"order_id": "#W1"},
        {"\uff4frder.id": "#W1"},
        {"order": {"\u0456d": "#W1"}},
    ],
)
def test_control_another_key_is_not_reached(args: dict[str, Any]) -> None:
    assert passes(NEVER_DOTTED, Trace("hi").call("refund", args, {}))


def test_a_path_to_a_key_with_dots_reaches_it_in_output_and_error() -> None:
    rule = constraint(id="n", never={"tool": "get", "where": {"output.user.email": EVE}})
    assert not passes(rule, Trace("hi").call("get", {}, {"user.email": EVE}))
    assert not passes(
        rule, Trace("hi").call("get", {}, {"a": 1, "user.email.": 0, "user": {"email": EVE}})
    )
    assert passes(rule, Trace("hi").call("get", {}, {"user.email": MAYA}))
    error = f"Refused: {json.dumps({'a.b.code': 'not_found'})}"
    assert not passes(not_found("error.a.b.code"), failed_with(error))


def test_a_dotted_key_licensed_only_where_every_reading_is() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {"tool": "get", "capture": {"o": "output.id"}},
            "then": {"tool": "refund"},
            "where": {"args.order.id": "$o"},
        },
    )

    def licensed(args: dict[str, Any]) -> bool:
        trace = Trace("hi").call("get", {}, {"id": "#W1"})
        return passes(rule, trace.call("refund", args, {}))

    assert licensed({"order.id": "#W1"})
    assert licensed({"order": {"id": "#W1"}})
    assert not licensed({"order": {"id": "#W1"}, "order.id": "#W2"})
    assert not licensed({"order.id": "#W2"})


def test_a_capture_of_a_key_read_two_ways_binds_nothing() -> None:
    rule = constraint(
        id="b",
        before={
            "first": {"tool": "get", "capture": {"e": "output.user.email"}},
            "then": {"tool": "verify"},
            "where": {"args.email": "$e"},
        },
    )
    output = {"user": {"email": EVE}, "user.email": MAYA}
    trace = Trace("hi").call("get", {}, output).call("verify", {"email": EVE}, {})
    assert not passes(rule, trace)
    trace = Trace("hi").call("get", {}, {"user.email": EVE}).call("verify", {"email": EVE}, {})
    assert passes(rule, trace)


def test_numeric_keys_and_list_indexes_stay_apart() -> None:
    rule = constraint(id="n", never={"tool": "refund", "where": {"args.items.0.id": "I-1"}})
    assert not passes(rule, Trace("hi").call("refund", {"items": [{"id": "I-1"}]}, {}))
    assert not passes(rule, Trace("hi").call("refund", {"items": {"0": {"id": "I-1"}}}, {}))
    assert passes(rule, Trace("hi").call("refund", {"items": [{"id": "I-2"}, {"id": "I-1"}]}, {}))


# --- 5. every reader stays linear ----------------------------------------------------------


def test_reading_what_follows_a_value_stays_linear() -> None:
    asides = "thanks. hmm, let me think. one sec! oh. " * 2500
    for text in (
        f"{EVE}. " + asides + "sure",
        f"{EVE}. " + "thanks " * 15_000 + "sure",
        f"{EVE}. " + "oh wait no " * 10_000 + "sure",
        f"{EVE} is one " + "i'd rather not use " * 5000,
        f"{EVE}, which " + "is " * 40_000,
        (f"{EVE}. " + "hmm. thanks. " * 5) * 4000,
    ):
        started = time.process_time()
        mentions(normalise(text), EVE, chosen=True)
        assert time.process_time() - started < 1.0
    started = time.process_time()
    reply_words(f"{EVE}. " + "i mean, " * 12_000 + "that's the one")
    reply_words("i meant what i " * 8000)
    assert time.process_time() - started < 1.0


def test_reading_errors_and_keys_stays_linear() -> None:
    for error in (
        '"{' * 50_000,
        '"{\\"a\\": ' * 20_000,
        '"' + '\\"' * 50_000,
        '"\\\\\\' * 20_000 + '"',
        "Refused: " + json.dumps(json.dumps({"code": "x", "pad": "a" * 90_000})),
        'x "[1, ' * 20_000,
    ):
        started = time.process_time()
        failed_with(error).check(not_found())
        assert time.process_time() - started < 1.0
    args = {f"order.k{i}": i for i in range(20_000)} | {"order.id": "#W1"}
    started = time.process_time()
    assert not passes(NEVER_DOTTED, Trace("hi").call("refund", args, {}))
    assert time.process_time() - started < 1.0
