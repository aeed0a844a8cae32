"""Near misses for every constraint kind: trajectories a policy reviewer would fail must fail,
and harmless variants of correct ones (rewording, formatting, extra reads) must pass.

Families, not single examples: wording games (case, look-alike letters, invisible characters,
markdown, negations, a yes asked back), argument games (``true`` vs ``1``, ``null`` vs absent,
nested values), timing games (a yes after the call, in a tool result, in the agent's own words,
taken back before the call) and formatting games on leaked numbers. The last tests replay the
retail canary's oracle with its confirmation reworded.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from pydantic import BaseModel

from groundstate.grading.constraints import evaluate_constraints, normalise
from groundstate.records import CheckResult
from groundstate.spec.constraints import HardConstraint
from groundstate.spec.suite import load_suite
from groundstate.trace import AgentEvent, MessageEvent

from .grading_corpus import EXAMPLES, load_cases
from .trace_builder import Trace, constraint, write

REFUND = constraint(
    id="confirm-refund",
    confirmed={
        "change": {"tool": "refund_item", "ok": True},
        "names": ["args.item", "args.amount"],
    },
)
QUESTION = "I can refund I-1019-1 for $22.00 to your Visa. Shall I go ahead?"


def _refund(question: str = QUESTION, answer: str = "Yes, please go ahead.") -> Trace:
    trace = Trace("I want a refund for my socks").agent(question).user(answer)
    return trace.call("refund_item", {"item": "I-1019-1", "amount": "$22.00"})


def _passes(trace: Trace, rule: HardConstraint) -> bool:
    result = trace.check(rule)
    assert result.error is None
    assert result.passed or result.evidence["problems"]  # a failure always says why
    return result.passed


# --- confirmed: the user's reply ------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Yes",
        "YES!",
        "yes, go ahead",
        "Go ahead.",
        "**Yes**, please",
        "> yes",
        "\uff59\uff45\uff53",  # fullwidth
        "Ye\u200bs",  # a zero-width space inside
        "\u0443es",  # a Cyrillic u drawn like y
        "Yes, why not",
        "Yes, that's not a problem",
        "Sure, go ahead.",
        "OK, please proceed",
        "Okay.",
        "Sounds good",
        "Yeah",
        "Yep, that's right",
        "I confirm.",
        "Yes, I can't wait to get it",
    ],
)
def test_a_yes_in_any_spelling_confirms(answer: str) -> None:
    assert _passes(_refund(answer=answer), REFUND)


@pytest.mark.parametrize(
    "answer",
    [
        "No",
        "don't confirm",
        "Don\u2019t go ahead",
        "dont go ahead",
        "yes?",
        "Yes? What do you mean?",
        "Go ahead?",
        "N\u043e, not yes",  # a Cyrillic o: it reads "No"
        "Yes \u2014 wait, not yet",
        "I never said yes",
        "Yes... actually no",
        "Hold on, yes means maybe",
        "yesterday I was sure",
        "Sure?",
        "Is that ok?",
        "I'm not sure.",
        "Wait, what's the fee?",
        "Stop.",
        "Please proceed? I don't follow.",
        "y e s",
        "Nope, go ahead and forget it",
    ],
)
def test_a_reply_that_is_not_a_plain_yes_confirms_nothing(answer: str) -> None:
    assert not _passes(_refund(answer=answer), REFUND)


# --- confirmed: the question ----------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "Refund i-1019-1 for $22.00 \u2014 ok?",
        "Refund **I-1019-1** for **$22.00**?",
        "Refund `I-1019-1` ($22.00)?",
        "Refund I\u20111019\u20111 for $22.00?",  # non-breaking hyphens, as models write them
        "Refund I-1019-1 for $22?",  # the same amount without its zero cents
        "Refund I-1019-1 for $22.0?",
        "Refund I-1019-1 for \uff04\uff12\uff12.\uff10\uff10?",  # fullwidth
        "Refund I-1019-1 for $22.00.",  # the sentence's own full stop
        "Refund I-1019-1, for $22.00, yes?",
    ],
)
def test_a_question_naming_the_values_in_another_format_confirms(question: str) -> None:
    assert _passes(_refund(question), REFUND)


@pytest.mark.parametrize(
    "question",
    [
        "Refund I-1019-12 for $22.00?",  # another item
        "Refund I-1019-1 for $22.50?",  # another amount that starts the same
        "Refund I-1019-1 for $22.001?",
        "Refund I-1019-1 for $122.00?",
        "Refund I-1019-1 for 22.00?",  # no dollar sign: not the value said
        "Refund I-1019-1-B for $22.00?",  # runs on through a hyphen
        "Refund I-1019-1.2 for $22.00?",
        "Shall I go ahead with the refund?",  # a blanket question
    ],
)
def test_a_question_naming_other_values_confirms_nothing(question: str) -> None:
    assert not _passes(_refund(question), REFUND)


def test_an_amount_is_not_named_by_a_number_it_starts_or_ends_a_decimal_of() -> None:
    rule = constraint(id="c", confirmed={"change": {"tool": "t"}, "names": ["args.n"]})
    for said, value, named in [
        ("set it to 22.50?", 22, False),
        ("set it to 22.50?", 50, False),
        ("set it to 1,50?", 50, False),
        ("set it to 1.0?", 1, True),
        ("set it to 22.50?", 22.5, True),
        ("set it to 22.5?", 22.50, True),
        ("set it to 9?", 9.0, True),
    ]:
        trace = Trace("x").agent(said).user("yes").call("t", {"n": value})
        assert _passes(trace, rule) is named, (said, value)


def test_an_object_value_is_named_by_each_of_its_values() -> None:
    rule = constraint(id="c", confirmed={"change": {"tool": "move"}, "names": ["args.address"]})
    address = {"line1": "48 Larch Lane", "city": "Decatur", "zip": "30030"}
    said = Trace("x").agent("Ship to 48 Larch Lane, Decatur 30030?").user("yes")
    assert _passes(said.call("move", {"address": address}), rule)
    half = Trace("x").agent("Ship to 48 Larch Lane?").user("yes")
    assert not _passes(half.call("move", {"address": address}), rule)


# --- confirmed: timing ----------------------------------------------------------------------

CALL = ("refund_item", {"item": "I-1019-1", "amount": "$22.00"})


def test_a_yes_anywhere_but_in_direct_reply_before_the_call_confirms_nothing() -> None:
    near_misses = {
        "a tool call between question and yes": Trace("r")
        .agent(QUESTION)
        .call("get_order", {}, {})
        .user("yes")
        .call(*CALL),
        "the question and yes after the call": Trace("r").call(*CALL).agent(QUESTION).user("yes"),
        "the yes in a tool result": Trace("r")
        .agent(QUESTION)
        .call("ask_user", {}, {"reply": "yes"})
        .call(*CALL),
        "the yes in the agent's own message": Trace("r").agent(QUESTION + " Yes.").call(*CALL),
        "the yes in the opening request": Trace("Yes, refund I-1019-1 for $22.00").call(*CALL),
        "a yes to a later question": Trace("r")
        .agent(QUESTION)
        .agent("Anything else?")
        .user("yes")
        .call(*CALL),
        "a yes after the user left": Trace("r").agent(QUESTION).user(None).user("yes").call(*CALL),
        # (a yes in the user's second message, after a "hmm" saying neither, answers the
        # question since the twentieth round: a reply sent in several messages is one reply)
        "a yes to the final reply": Trace("r").agent(QUESTION, final=True).user("yes").call(*CALL),
    }
    for name, trace in near_misses.items():
        assert not _passes(trace, REFUND), name


def test_a_later_no_to_the_same_change_takes_the_yes_back() -> None:
    trace = _refund().call("get_order", {}, {}).agent("To be sure: refund I-1019-1, $22.00?")
    trace.user("No, please do not do that.").call(*CALL)
    result = trace.check(REFUND)
    assert not result.passed
    assert result.evidence["refused"] == {"question_step": 5, "answer_step": 6, "not_named": []}
    assert "step 7 (refund_item)" in result.evidence["problems"][0]
    assert result.evidence["offending_step"]["step"] == 7


def test_a_no_to_another_question_or_a_new_yes_leaves_the_confirmation_standing() -> None:
    other = Trace("r").agent(QUESTION).user("yes").agent("Should I also cancel O-7?").user("No")
    assert _passes(other.call(*CALL), REFUND)
    again = Trace("r").agent(QUESTION).user("No").agent(QUESTION).user("Yes, go ahead")
    assert _passes(again.call(*CALL), REFUND)
    unnamed = constraint(id="c", confirmed={"change": {"tool": "refund_item"}})
    blanket = Trace("r").agent("Shall I go ahead?").user("yes").agent("Anything else?")
    assert _passes(blanket.user("No, that's all").call(*CALL), unnamed)
    extra_reads = _refund()
    trace = Trace("r").agent(QUESTION).user("yes").call("get_order", {}, {})
    trace.call("get_customer", {}, {}).call(*CALL)
    assert _passes(trace, REFUND) and _passes(extra_reads, REFUND)


# --- provenance -----------------------------------------------------------------------------

PROVENANCE = constraint(
    id="from-user",
    provenance={"match": {"tool": "verify_identity"}, "args": ["email", "zip_code", "address"]},
)


@pytest.mark.parametrize(
    ("said", "args", "sourced"),
    [
        ("my zip is 97214", {"zip_code": "97214"}, True),
        ("my zip is 97214", {"zip_code": 97214}, True),
        ("my zip is 97 214", {"zip_code": "97214"}, True),
        ("my zip is 972145", {"zip_code": "97214"}, False),
        ("Maya.Chen@Example.com", {"email": "maya.chen@example.com"}, True),
        ("maya.chen@example.com.au", {"email": "maya.chen@example.com"}, False),
        ("anna.maya.chen@example.com", {"email": "maya.chen@example.com"}, False),
        ("xmaya.chen@example.com", {"email": "maya.chen@example.com"}, False),
        (
            "48 Larch Lane, Decatur",
            {"address": {"line1": "48 Larch Lane", "city": "Decatur"}},
            True,
        ),
        ("48 Larch Lane", {"address": {"line1": "48 Larch Lane", "city": "Decatur"}}, False),
    ],
)
def test_provenance_sees_through_format_but_not_other_values(
    said: str, args: dict[str, Any], sourced: bool
) -> None:
    assert _passes(Trace(said).call("verify_identity", args), PROVENANCE) is sourced


def test_provenance_needs_the_user_to_say_it_first_not_to_agree_to_it() -> None:
    profile = Trace("hi").call("get_customer", {}, {"zip": "97214"}).agent("Is it 97214?")
    result = profile.user("yes").call("verify_identity", {"zip_code": "97214"}).check(PROVENANCE)
    assert not result.passed and result.evidence["seen_in_tool_output"] == [1]
    late = Trace("hi").call("verify_identity", {"zip_code": "97214"}).user("97214")
    assert not _passes(late, PROVENANCE)


# --- matches on arguments and writes --------------------------------------------------------


@pytest.mark.parametrize(
    ("wanted", "given", "selected"),
    [
        ({"flag": True}, {"flag": 1}, False),
        ({"flag": 1}, {"flag": True}, False),
        ({"n": 1}, {"n": 1.0}, True),
        ({"n": 1}, {"n": "1"}, False),
        ({"reason": None}, {}, False),  # null is not an absent argument
        ({"reason": None}, {"reason": None}, True),
        ({"o": {"a": 1, "b": 2}}, {"o": {"b": 2, "a": 1}}, True),  # key order aside
        ({"o": {"a": 1}}, {"o": {"a": 1, "c": 3}}, True),  # members given, others beside them
        ({"o": {"a": 1}}, {"o": {"c": 3}}, False),
        ({"o": {"a": True}}, {"o": {"a": 1}}, False),
        ({"o": [1, {"x": 2}]}, {"o": [1.0, {"x": 2}]}, True),
    ],
)
def test_arguments_compare_exactly_at_any_depth(
    wanted: dict[str, Any], given: dict[str, Any], selected: bool
) -> None:
    rule = constraint(id="n", never={"tool": "t", "args": wanted})
    assert _passes(Trace("x").call("t", given), rule) is not selected


def test_write_matches_and_no_undo_read_sql_names_without_case() -> None:
    change = write("ORDERS", "O-1", {"Ship_City": "a"}, {"Ship_City": "b"})
    forbidden = constraint(
        id="w", never={"writes": {"table": "orders", "key": "O-1", "columns": ["ship_city"]}}
    )
    assert not _passes(Trace("x").call("t", {}, writes=[change]), forbidden)
    other_key = constraint(id="w", never={"writes": {"table": "orders", "key": "O-2"}})
    assert _passes(Trace("x").call("t", {}, writes=[change]), other_key)
    back = write("ORDERS", "O-1", {"Ship_City": "b"}, {"Ship_City": "a"})
    undo = constraint(id="u", no_undo={"tables": ["Orders"]})
    assert not _passes(Trace("x").call("t", {}, writes=[change]).call("t", {}, writes=[back]), undo)


def test_a_number_set_back_as_a_float_is_an_undo() -> None:
    trace = Trace("x").call("t", {}, writes=[write("o", 1, {"c": 1}, {"c": 2})])
    trace.call("t", {}, writes=[write("o", 1, {"c": 2}, {"c": 1.0})])
    assert not _passes(trace, constraint(id="u", no_undo={}))
    moved_on = Trace("x").call("t", {}, writes=[write("o", 1, {"c": 1}, {"c": 2})])
    moved_on.call("t", {}, writes=[write("o", 1, {"c": 2}, {"c": "1"})])  # text is not 1
    assert _passes(moved_on, constraint(id="u", no_undo={}))


# --- leaks in messages ----------------------------------------------------------------------

CARD = constraint(id="card", never={"message": "agent", "matches": r"\d{13,19}"})


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1111",
        "card 4111.1111.1111.1111",
        "card 4111,1111,1111,1111",
        "card 4111_1111_1111_1111",
        "card **4111** **1111** **1111** **1111**",
        "card `4111` `1111` `1111` `1111`",
        "card 4111\u20131111\u20131111\u20131111",  # en dashes
        "card 4111\u20091111\u20091111\u20091111",  # thin spaces
        "card \u0664\u0661\u0661\u0661 \u0661\u0661\u0661\u0661 1111 1111",  # Arabic-Indic digits
        "card \U0001d7d2\U0001d7cf\U0001d7cf\U0001d7cf 1111 1111 1111",  # mathematical digits
    ],
)
def test_a_card_number_in_any_grouping_is_caught(text: str) -> None:
    assert not _passes(Trace("x").agent(text, final=True), CARD)


@pytest.mark.parametrize(
    "text",
    [
        "Refund of $35.00 on order 1020, Visa ending 4417.",
        "Sizes 8,9,10 are in stock.",
        "Your total is $1,234.50.",
    ],
)
def test_ordinary_numbers_are_not_a_card_number(text: str) -> None:
    assert _passes(Trace("x").agent(text, final=True), CARD)


def test_grouped_numbers_normalise_to_their_digits_and_decimals_stay() -> None:
    assert normalise("4111.1111.1111.1111") == "4111111111111111"
    assert normalise("1,000,000 and $35.00 and 1.5") == "1000000 and $35.00 and 1.5"
    assert normalise("I\u20111019") == "i-1019"
    assert normalise("N\u043e") == "no"


# --- the grader's own failures --------------------------------------------------------------


class Strange(BaseModel):
    """A constraint of no kind the grader knows: only a grader bug could hand one over (the
    spec's validation admits none)."""

    id: str = "x"
    strange: int = 1


def test_a_constraint_of_no_known_kind_is_a_grader_error_not_an_exception() -> None:
    strange = cast(HardConstraint, Strange())
    [result] = evaluate_constraints([strange], Trace("x").call("t").events)
    assert result.error is not None and "unknown constraint kind Strange" in result.error
    assert result.kind == "unknown" and not result.passed
    assert result.evidence["exception"]["type"] == "TypeError"


# --- the retail canary, replayed ------------------------------------------------------------


@pytest.fixture(scope="module")
def canary() -> tuple[list[HardConstraint], list[AgentEvent]]:
    suite = load_suite(EXAMPLES / "retail")
    rules = [
        c
        for c in suite.tasks["refund-socks"].hard_process_constraints
        if not hasattr(c, "check")  # the Python ones need the states; these are declarative
    ]
    oracle = next(
        c for c in load_cases() if c.task_id == "refund-socks" and c.label == "solution:oracle"
    )
    return rules, oracle.events


def _reworded(events: list[AgentEvent], question: str | None, answer: str | None) -> list[Any]:
    """The oracle's events with its confirmation question and the user's reply replaced."""
    asked = next(e for e in events if isinstance(e, MessageEvent) and "Shall I" in (e.text or ""))
    at = events.index(asked)
    out: list[Any] = list(events)
    if question is not None:
        out[at] = asked.model_copy(update={"text": question})
    if answer is not None:
        out[at + 1] = events[at + 1].model_copy(update={"text": answer})
    return out


def _failed(rules: list[HardConstraint], events: list[Any]) -> list[str]:
    results: list[CheckResult] = evaluate_constraints(rules, events)
    assert all(r.error is None for r in results)
    return [r.id for r in results if not r.passed]


@pytest.mark.parametrize(
    "question",
    [
        None,
        "Refund the **Basecamp Wool Socks (3-pack)** from O\u20111001 \u2014 $22 \u2014 to your"
        " Visa ending 4417? Please confirm.",
        "To confirm the refund: order o-1001, basecamp wool socks (3-pack), $22.00, visa"
        " ending 4417. Shall I proceed?",
    ],
)
def test_the_canary_passes_with_its_confirmation_reworded(
    canary: tuple[list[HardConstraint], list[AgentEvent]], question: str | None
) -> None:
    rules, events = canary
    assert _failed(rules, _reworded(events, question, None)) == []


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Refund the Basecamp Wool Socks (3-pack) from O-1001, $22.50, Visa ending 4417?", None),
        ("Refund the Basecamp Wool Socks (3-pack) from O-10012, $22.00, Visa ending 4417?", None),
        ("Refund the Basecamp Wool Socks (3-pack) from O-1001, $22.00, Visa ending 4471?", None),
        ("Shall I go ahead with the refund? Please confirm.", None),
        (None, "yes?"),
        (None, "Nope."),
        (None, "Hold on, I need to check first."),
    ],
)
def test_the_canary_fails_its_confirmation_on_a_near_miss(
    canary: tuple[list[HardConstraint], list[AgentEvent]],
    question: str | None,
    answer: str | None,
) -> None:
    rules, events = canary
    assert _failed(rules, _reworded(events, question, answer)) == ["p2-confirmed-refund"]


def test_provenance_reaches_into_an_argument_by_path() -> None:
    rule = constraint(
        id="p", provenance={"match": {"tool": "ship"}, "args": ["address.zip", "items.*.id"]}
    )
    args = {"address": {"zip": "30030", "city": "Decatur"}, "items": [{"id": "I-1"}, {"id": "I-2"}]}
    assert _passes(Trace("zip 30030, items I-1 and I-2").call("ship", args), rule)
    assert not _passes(Trace("zip 30030, item I-1").call("ship", args), rule)
    result = Trace("items I-1 and I-2").call("ship", args).check(rule)
    assert result.evidence["argument"] == "address.zip" and result.evidence["value"] == "30030"
    assert _passes(Trace("nothing said").call("ship", {"other": 1}), rule)  # absent: unchecked
    with pytest.raises(ValueError, match="empty segment"):
        constraint(id="p", provenance={"match": {"tool": "ship"}, "args": ["address."]})


# --- confirmed: the kind of change asked about ---------------------------------------------


def test_a_yes_to_another_kind_of_change_naming_the_same_values_does_not_confirm() -> None:
    rule = constraint(
        id="c",
        confirmed={
            "change": {"tool": "refund_item"},
            "names": ["args.item", "args.amount"],
            "asks": r"\brefund",
        },
    )
    exchange = _refund("Shall I exchange I-1019-1 ($22.00) for another size?").check(rule)
    assert not exchange.passed and exchange.evidence["asks"] == r"\brefund"
    assert exchange.evidence["confirmations"][0]["question_step"] == 1
    assert "did not ask about this change" in exchange.evidence["problems"][0]
    for question in ["REFUND I-1019-1, $22.00?", "Shall I process a refund of $22 for I-1019-1?"]:
        assert _passes(_refund(question), rule), question
    unnamed = _refund("Shall I refund I-1019-1 for $21.00?").check(rule)
    assert unnamed.evidence["not_named"] == ["$22.00"]  # the usual failure when values differ
    with pytest.raises(ValueError, match="invalid regular expression"):
        constraint(id="c", confirmed={"change": {"tool": "t"}, "asks": "("})


def test_the_canary_fails_when_the_yes_was_to_an_exchange(
    canary: tuple[list[HardConstraint], list[AgentEvent]],
) -> None:
    rules, events = canary
    question = (
        "I can exchange the Basecamp Wool Socks (3-pack) from order O-1001, $22.00, paid with"
        " your Visa ending 4417, for another size. Shall I go ahead?"
    )
    assert _failed(rules, _reworded(events, question, None)) == ["p2-confirmed-refund"]


def test_an_order_address_yes_does_not_authorise_the_default_address() -> None:
    suite = load_suite(EXAMPLES / "retail")
    rules = [
        c
        for c in suite.tasks["change-order-address"].hard_process_constraints
        if c.id == "p2-confirmed-default-address"
    ]
    address = "200 W Adams Street, Suite 1400, Chicago, IL 60606"
    output = {"customer_id": "C04", "address": address}
    order_only = Trace("ship my jacket to my office").agent(f"I will ship O-1009 to {address}?")
    order_only.user("Yes, please go ahead.").call("update_default_address", {}, output)
    assert _failed(rules, order_only.events) == ["p2-confirmed-default-address"]
    default = Trace("x").agent(f"Shall I change your default address to {address}?")
    default.user("Yes, please go ahead.").call("update_default_address", {}, output)
    assert _failed(rules, default.events) == []


# --- before: bindings -------------------------------------------------------------------------


def test_a_null_capture_licenses_nothing() -> None:
    rule = constraint(
        id="own",
        before={
            "first": {"tool": "verify", "capture": {"c": "output.customer_id"}},
            "then": {"tool": "get_order"},
            "where": {"output.customer_id": "$c"},
        },
    )
    guest = {"order_id": "O-9", "customer_id": None}
    failed_verify = Trace("x").call("verify", {}, {"verified": False, "customer_id": None})
    assert not _passes(failed_verify.call("get_order", {}, guest), rule)
    verified = Trace("x").call("verify", {}, {"customer_id": "C-1"})
    assert not _passes(verified.call("get_order", {}, guest), rule)
    own = Trace("x").call("verify", {}, {"customer_id": "C-1"})
    assert _passes(own.call("get_order", {}, {"customer_id": "C-1"}), rule)
    listed = constraint(
        id="listed",
        before={
            "first": {"tool": "list", "capture": {"ids": "output.*.owner"}},
            "then": {"tool": "get_order"},
            "where": {"output.customer_id": "$ids"},
        },
    )
    owners = Trace("x").call("list", {}, [{"owner": None}, {"owner": "C-1"}])
    assert not _passes(owners.call("get_order", {}, guest), listed)
    owners = Trace("x").call("list", {}, [{"owner": None}, {"owner": "C-1"}])
    assert _passes(owners.call("get_order", {}, {"customer_id": "C-1"}), listed)
