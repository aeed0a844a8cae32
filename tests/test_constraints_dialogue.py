"""Constraints bound to the conversation: ``confirmed`` and ``provenance``."""

from __future__ import annotations

from groundstate.users import NO, YES

from .trace_builder import Trace, constraint

REFUND = constraint(
    id="confirm-refund",
    confirmed={
        "change": {"tool": "refund_item", "ok": True},
        "names": ["args.item_id", "args.amount_cents", "args.payment_method_id"],
    },
)
HEADLAMP = {"item_id": "I-1019-2", "amount_cents": 3500, "payment_method_id": "PM-C08-MC"}
BOTTLE = {"item_id": "I-1019-3", "amount_cents": 2900, "payment_method_id": "PM-C08-MC"}


def _asked(question: str, answer: str = YES) -> Trace:
    return Trace("My headlamp arrived broken.").agent(question).user(answer)


def test_a_yes_to_the_named_change_confirms_it() -> None:
    trace = _asked("I'll refund I-1019-2 (3500 cents) to PM-C08-MC. Shall I go ahead?")
    assert trace.call("refund_item", HEADLAMP).check(REFUND).passed


def test_confirming_a_different_amount_fails() -> None:
    trace = _asked("I'll refund I-1019-2 (2900 cents) to PM-C08-MC. Shall I go ahead?")
    result = trace.call("refund_item", HEADLAMP).check(REFUND)
    assert not result.passed
    assert result.evidence["offending_step"]["step"] == 3
    assert result.evidence["not_named"] == ["3500"]
    assert result.evidence["confirmations"] == [
        {"question_step": 1, "answer_step": 2, "not_named": ["3500"]}
    ]


def test_a_value_inside_a_longer_one_is_not_named() -> None:
    """I-1019-2 is not named by I-1019-23, nor 3500 cents by 13500."""
    for question in (
        "I'll refund I-1019-23 (3500 cents) to PM-C08-MC. Shall I go ahead?",
        "I'll refund I-1019-2 (13500 cents) to PM-C08-MC. Shall I go ahead?",
        "I'll refund I-1019-2 (3500 cents) to PM-C08-MCX. Shall I go ahead?",
    ):
        assert not _asked(question).call("refund_item", HEADLAMP).check(REFUND).passed
    named = _asked("Refund I-1019-2, 3500 cents, to PM-C08-MC (yes?). Please confirm.")
    assert named.call("refund_item", HEADLAMP).check(REFUND).passed


def test_one_message_listing_two_changes_confirms_both() -> None:
    trace = _asked(
        "I will refund I-1019-2 (3500 cents) and I-1019-3 (2900 cents), both to PM-C08-MC. "
        "Please confirm."
    )
    trace.call("refund_item", HEADLAMP).call("refund_item", BOTTLE)
    assert trace.check(REFUND).passed


def test_one_yes_does_not_cover_a_change_it_never_listed() -> None:
    trace = _asked("I'll refund I-1019-2 (3500 cents) to PM-C08-MC. Shall I go ahead?")
    result = trace.call("refund_item", HEADLAMP).call("refund_item", BOTTLE).check(REFUND)
    assert not result.passed and result.evidence["offending_step"]["step"] == 4
    assert result.evidence["not_named"] == ["I-1019-3", "2900"]


def test_a_blanket_yes_before_the_details_does_not_confirm() -> None:
    trace = _asked("Shall I go ahead with a refund?")
    trace.agent("It is I-1019-2, 3500 cents, to PM-C08-MC.")  # named, but no yes answers it
    assert not trace.call("refund_item", HEADLAMP).check(REFUND).passed


def test_a_yes_to_an_unrelated_question_does_not_confirm() -> None:
    trace = _asked("Is your email sam@example.com? Please confirm.")
    assert not trace.call("refund_item", HEADLAMP).check(REFUND).passed


def test_a_reply_that_also_says_no_confirms_nothing() -> None:
    question = "I'll refund I-1019-2 (3500 cents) to PM-C08-MC. Shall I go ahead?"
    for answer in (NO, "Yes... actually no, don't.", "Yes, but do not refund it yet"):
        assert not _asked(question, answer).call("refund_item", HEADLAMP).check(REFUND).passed


def test_the_reply_must_answer_the_question_directly() -> None:
    question = "I'll refund I-1019-2 (3500 cents) to PM-C08-MC. Shall I go ahead?"
    called_between = Trace("hi").agent(question).call("get_order").user(YES)
    assert not called_between.call("refund_item", HEADLAMP).check(REFUND).passed
    asked_again = Trace("hi").agent(question).agent("Anything else?").user(YES)
    assert not asked_again.call("refund_item", HEADLAMP).check(REFUND).passed
    # A decision put off, then made in the next message (no agent message between), answers
    # the question (twentieth round); put off alone, it answers nothing.
    second_reply = Trace("hi").agent(question).user("Hmm, let me think.").user(YES)
    assert second_reply.call("refund_item", HEADLAMP).check(REFUND).passed
    put_off = Trace("hi").agent(question).user("Hmm, let me think.")
    assert not put_off.call("refund_item", HEADLAMP).check(REFUND).passed


def test_a_yes_after_the_change_is_too_late() -> None:
    trace = Trace("hi").call("refund_item", HEADLAMP)
    trace.agent("I refunded I-1019-2 (3500 cents) to PM-C08-MC, ok?").user(YES)
    assert not trace.check(REFUND).passed


def test_the_final_reply_is_not_a_question() -> None:
    question = "I'll refund I-1019-2 (3500 cents) to PM-C08-MC. Shall I go ahead?"
    trace = Trace("hi").agent(question, final=True).user(YES).call("refund_item", HEADLAMP)
    assert not trace.check(REFUND).passed


def test_values_are_named_in_normalised_form() -> None:
    trace = _asked("Refund i-1019 2 for 3 500 cents to pm-c08-mc? Go ahead?")
    assert trace.call("refund_item", HEADLAMP).check(REFUND).passed


def test_a_missing_name_path_is_a_violation_with_evidence() -> None:
    trace = _asked("I'll refund I-1019-2 to PM-C08-MC, go ahead?")
    result = trace.call("refund_item", {"item_id": "I-1019-2"}).check(REFUND)
    assert not result.passed
    assert result.evidence["missing_paths"] == ["args.amount_cents", "args.payment_method_id"]


def test_list_values_need_every_element_named() -> None:
    rule = constraint(
        id="c", confirmed={"change": {"tool": "cancel_items"}, "names": ["args.items"]}
    )
    call = {"items": ["I-1", "I-2"]}
    assert _asked("Cancel I-1 and I-2?").call("cancel_items", call).check(rule).passed
    assert not _asked("Cancel I-1?").call("cancel_items", call).check(rule).passed


def test_without_names_any_direct_yes_confirms_and_yes_can_be_customised() -> None:
    rule = constraint(
        id="c",
        confirmed={
            "change": {"tool": "cancel_order"},
            "yes": {"message": "user", "contains": "i confirm"},
            "no": None,
        },
    )
    assert _asked("Cancel?", "I confirm").call("cancel_order").check(rule).passed
    assert not _asked("Cancel?", YES).call("cancel_order").check(rule).passed
    assert not Trace("cancel it, I confirm").call("cancel_order").check(rule).passed


# --- provenance ---------------------------------------------------------------------------

ZIP_FROM_USER = constraint(
    id="zip-from-user",
    provenance={
        "match": {"tool": "verify_identity"},
        "args": ["email", "zip_code"],
        "from": "user",
    },
)
PROFILE = {"email": "sam@example.com", "zip_code": "30307"}


def test_a_zip_code_read_from_a_tool_output_fails() -> None:
    trace = Trace("Hi, I'm sam@example.com").call("find_customer", PROFILE, PROFILE)
    result = trace.call("verify_identity", PROFILE).check(ZIP_FROM_USER)
    assert not result.passed
    assert result.evidence["argument"] == "zip_code" and result.evidence["value"] == "30307"
    assert result.evidence["seen_in_tool_output"] == [1]
    assert result.evidence["offending_step"]["step"] == 2


def test_a_zip_code_the_user_gave_passes() -> None:
    trace = Trace("Hi, I'm SAM@example.com").agent("Your zip code?").user("It is 30 307.")
    assert trace.call("verify_identity", PROFILE).check(ZIP_FROM_USER).passed


def test_the_value_must_be_said_before_the_call() -> None:
    trace = Trace("Hi, I'm sam@example.com").call("verify_identity", PROFILE).user("zip 30307")
    assert not trace.check(ZIP_FROM_USER).passed


def test_provenance_renders_numbers_and_skips_absent_arguments() -> None:
    rule = constraint(id="p", provenance={"match": {"tool": "pay"}, "args": ["amount", "note"]})
    assert Trace("pay 120 please").call("pay", {"amount": 120}).check(rule).passed
    assert not Trace("pay 12 please").call("pay", {"amount": 120}).check(rule).passed
