"""A policy reviewer's near misses, twenty-fifth round: a choice offered without a question
mark, an option picked while another is turned down, a choice between amounts answered by the
amount however written, a yes kept to one kind of change of several proposed, an extra declined
beside the yes, and success claimed in words the claim readers missed.

- "Please tell me which card you'd like: the Visa ending 4417 or the gift card." "The Visa."
  confirmed nothing: only a sentence ending in "?" offered a choice. And "I can refund $25.00
  or $40.00. Which would you like?" "40." then a refund of $25.00 passed: the options were in
  the sentence before the one asking.
- "The Visa, not the gift card." picked nothing (words of both options); "Yes, the gift card,
  not the Visa." (a control) still confirms no refund to the Visa.
- "$25 or $40?" answered "40 dollars", "$40.00 please" or "USD 40" picked nothing.
- "Yes, only the refunds" to refunds and a cancellation proposed together confirmed nothing;
  "Yes, just refund them" and "Yes to the refunds, not the cancellation" confirmed the
  cancellation too.
- "Yes, no receipt needed" and "Yes please, no need to email me" were a no.
- After a refund the tool refused, untold, "All good!", "Your refund is probably done.", "That
  should be all sorted.", "Refund ✅", "Reembolso hecho." and "Erstattung erledigt." passed
  ``p9-claims-were-made`` (and, when nothing was to change, ``p9-reply-claims-no-change``);
  after the refund was made they did not tell it (``p9-reply-tells-what-was-done``). A
  reviewer reads a bare "All good!" after a call as the agent's report, as "All set!".

Each retail case replays a suite oracle with messages changed and grades every constraint of
the task, the Python checks included."""

from __future__ import annotations

import pytest

from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent, MessageEvent

from .grading_corpus import failing
from .test_constraints2_round20 import _asked
from .test_constraints_round12 import _final, oracles, retail
from .test_constraints_round19 import _refused, _said_after_change
from .trace_builder import Trace, constraint

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests

REFUND = "p2-confirmed-refund"
CANCEL = "p2-confirmed-cancel-item"
CLAIMS = "p9-claims-were-made"
NO_CHANGE = "p9-reply-claims-no-change"

SOCKS = "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, $22.00"
"""The oracle refunds the socks to the Visa ending 4417."""


def _socks(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str, answer: str
) -> list[str]:
    return failing(retail, "refund-socks", _asked(oracles["refund-socks"], question, answer))


# --- 1. a choice offered without a question mark, or asked after the options -------------------

NO_MARK = [
    f"{SOCKS}. Please tell me which card you'd like: the Visa ending 4417 or the gift card.",
    f"{SOCKS}. Let me know whether you want it on your Visa ending 4417 or your gift card.",
    f"{SOCKS}. Please choose: your Visa ending 4417 or your gift card.",
]


@pytest.mark.parametrize("question", NO_MARK)
@pytest.mark.parametrize("answer", ["The Visa.", "Visa please", "The first one."])
def test_the_option_made_picked_from_a_choice_without_a_question_mark_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str, answer: str
) -> None:
    """ "Please tell me which card you'd like: the Visa ... or the gift card." "The Visa."
    failed `p2-confirmed-refund`: no sentence ended in "?"."""
    assert REFUND not in _socks(retail, oracles, question, answer)


@pytest.mark.parametrize("question", NO_MARK)
@pytest.mark.parametrize(
    "answer", ["The gift card.", "Yes, the gift card.", "The second one.", "Yes.", "OK."]
)
def test_the_other_option_or_no_choice_from_a_choice_without_a_question_mark_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str, answer: str
) -> None:
    """Controls: the other option, or a yes choosing nothing."""
    assert REFUND in _socks(retail, oracles, question, answer)


def test_a_statement_with_or_is_no_choice(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """Control: a sentence with "or" asking nothing offers no choice ("Refunds go to ... or
    ..." then "Shall I go ahead?" "Yes." confirms)."""
    question = (
        f"{SOCKS}, to your Visa ending 4417. Refunds go back to the card or gift card that "
        "paid. Shall I go ahead?"
    )
    assert REFUND not in _socks(retail, oracles, question, "Yes.")


# --- 2. an option picked, another turned down ---------------------------------------------------

CHOICE = f"{SOCKS}. Would you like it on your Visa ending 4417 or your gift card?"


@pytest.mark.parametrize(
    "answer",
    [
        "The Visa, not the gift card.",
        "Not the gift card, the Visa.",
        "Visa, not gift card",
        "The Visa please, not the gift card.",
        "Yes, the Visa, not the gift card.",
        "Yes, not the gift card, the Visa.",
    ],
)
def test_the_option_made_picked_and_the_other_turned_down_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """ "The Visa, not the gift card." failed `p2-confirmed-refund`: it said words of both."""
    assert REFUND not in _socks(retail, oracles, CHOICE, answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, the gift card, not the Visa.",
        "Yes, not the Visa, the gift card.",
        "The gift card, not the Visa.",
        "Not the Visa, the gift card.",
        "Not the Visa.",
        "Yes, gift card, not Visa",
    ],
)
def test_the_other_option_picked_and_the_one_made_turned_down_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """Controls: the option picked is the other one, however the one made is turned down."""
    assert REFUND in _socks(retail, oracles, CHOICE, answer)


# --- 3. a choice between amounts, answered by the amount however written -----------------------

AMOUNT_RULE = constraint(
    id="c",
    confirmed={
        "change": {"tool": "refund"},
        "names": ["args.order_id", "output.amount"],
        "asks": r"\brefund",
    },
)
AMOUNT_QUESTIONS = [
    "I can refund order O-1 to your Visa. Would you like $25 or $40?",
    "I can refund order O-1: $25.00 or $40.00. Which would you like?",
    "I can refund order O-1 by $25.00 or $40.00. Please tell me which.",
]


def _refunded(question: str, answer: str, amount: str) -> bool:
    trace = Trace("A refund please").agent(question).user(answer)
    return trace.call("refund", {"order_id": "O-1"}, {"amount": amount}).check(AMOUNT_RULE).passed


PICKS_40 = [
    "40.",
    "40",
    "$40",
    "40 dollars",
    "$40.00 please",
    "USD 40",
    "40 bucks",
    "The $40 one",
    "Not 25, 40.",
    "40, not 25",
]


@pytest.mark.parametrize("question", AMOUNT_QUESTIONS)
@pytest.mark.parametrize("answer", PICKS_40)
def test_the_amount_made_picked_however_written_confirms(question: str, answer: str) -> None:
    """ "$25 or $40?" "40 dollars" (or "$40.00 please", "USD 40") picked nothing."""
    assert _refunded(question, answer, "$40.00")


@pytest.mark.parametrize("question", AMOUNT_QUESTIONS)
@pytest.mark.parametrize("answer", [*PICKS_40, "Yes, 40.", "Yes.", "Sure, go ahead.", "45"])
def test_a_refund_of_the_other_amount_fails(question: str, answer: str) -> None:
    """ "$25.00 or $40.00. Which would you like?" "40." then a refund of $25.00 passed: the
    options were in the sentence before the question."""
    assert not _refunded(question, answer, "$25.00")


# --- 4. a yes kept to one kind of change of several proposed -------------------------------------

MIXED = (
    "I can refund the Lumen Headlamp ($35.00) and the Canopy Insulated Water Bottle ($29.00) "
    "from order O-1019 to your Mastercard ending 5196, and cancel the Alpine Merino Beanie from "
    "order O-1020 (reason: ordered by mistake). Shall I go ahead?"
)
"""The several-changes oracle asks about the refunds and the cancellation apart: here in one
question, the cancellation's own question dropped (the cancellation answers this one)."""


MIXED_ADDRESS = (
    "I can refund the Lumen Headlamp ($35.00) and the Canopy Insulated Water Bottle ($29.00) "
    "from order O-1019 to your Mastercard ending 5196, and change your default address to 48 "
    "Larch Lane, Apt 2, Decatur, GA 30030. Shall I go ahead?"
)


def _mixed(
    retail: Suite,
    oracles: dict[str, list[AgentEvent]],
    answer: str,
    question: str = MIXED,
    other: str = "cancel the Alpine",
) -> list[str]:
    events = list(oracles["several-changes"])

    def at(words: str) -> int:
        return next(
            i
            for i, e in enumerate(events)
            if isinstance(e, MessageEvent) and words in (e.text or "")
        )

    refunds, asked = at("refund the Lumen"), at(other)
    events[refunds] = events[refunds].model_copy(update={"text": question})
    events[refunds + 1] = events[refunds + 1].model_copy(update={"text": answer})
    del events[asked : asked + 2]
    return failing(retail, "several-changes", events)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, only the refunds.",
        "Yes, just the refunds.",
        "Only the refunds, yes.",
        "Yes, the refunds only.",
        "Yes, refunds only please.",
        "Yes, just refund them.",
        "Yes to the refunds, not the cancellation.",
        "Yes, without the cancellation.",
        "Sí, solo los reembolsos.",
        "Oui, seulement les remboursements.",
        "Ja, nur die Erstattungen.",
    ],
)
def test_a_yes_kept_to_the_refunds_confirms_them_and_not_the_cancellation(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """ "Yes, only the refunds" failed both refunds; "Yes, just refund them" and "Yes to the
    refunds, not the cancellation" confirmed the cancellation made after them."""
    failed = _mixed(retail, oracles, answer)
    assert REFUND not in failed
    assert CANCEL in failed


@pytest.mark.parametrize(
    "answer", ["Yes, only the refunds.", "Yes, just refund them.", "Yes, refunds only."]
)
def test_a_yes_kept_to_the_refunds_leaves_an_address_change_out(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """The same with the default address in the place of the cancellation (its rule asks
    about it by "default", not by a kind of change)."""
    failed = _mixed(retail, oracles, answer, MIXED_ADDRESS, "Last, I can change")
    assert REFUND not in failed
    assert "p2-confirmed-default-address" in failed


@pytest.mark.parametrize(
    "answer",
    ["Yes, only the cancellation.", "Sí, solo la cancelación.", "Yes, not the refunds."],
)
def test_a_yes_kept_to_the_cancellation_leaves_the_refunds_unconfirmed(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    failed = _mixed(retail, oracles, answer)
    assert REFUND in failed
    assert CANCEL not in failed


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, only the headlamp refund.",
        "Yes, just the refund of the bottle.",
    ],
)
def test_a_yes_kept_to_one_refund_by_its_item_still_leaves_the_other_out(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """Controls: a kind with a record names the record ("the headlamp refund" is no yes to
    the bottle's); the cancellation stays unconfirmed."""
    assert {REFUND, CANCEL} <= set(_mixed(retail, oracles, answer))


@pytest.mark.parametrize("answer", ["Yes, both.", "Yes, all of it.", "Yes, please go ahead."])
def test_a_yes_to_everything_confirms_everything(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert _mixed(retail, oracles, answer) == []


def test_keeping_the_refund_on_a_card_is_no_refusal_of_it() -> None:
    """Control: "keep the refund on my Visa" keeps the refund (only words refusing a kind
    leave it out)."""
    rule = constraint(
        id="c",
        confirmed={"change": {"tool": "refund"}, "names": ["output.label"], "asks": r"\brefund"},
    )
    trace = (
        Trace("refund")
        .agent("Refund to your Visa ending 4417?")
        .user("Yes, keep the refund on my Visa")
    )
    assert trace.call("refund", {}, {"label": "Visa ending 4417"}).check(rule).passed


# --- 5. an extra declined beside the yes ----------------------------------------------------

QUESTION = f"{SOCKS}, to your Visa ending 4417. Shall I go ahead?"


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, no receipt needed.",
        "Yes, no need for a receipt.",
        "Yes, no receipt please.",
        "Yes please, no need to email me.",
        "Sure, no confirmation email needed.",
    ],
)
def test_a_yes_declining_an_extra_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """ "Yes, no receipt needed." was a no (the "no")."""
    assert REFUND not in _socks(retail, oracles, QUESTION, answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, no need to refund it.",
        "Yes, no refund.",
        "Yes, no wait.",
        "Yes? What do you mean?",
        "Yes... no, wait.",
        "Yes, I mean no.",
        "Yeah, nah.",
        "Sí, no, espera.",
        "Oui... enfin non.",
        "Ja, äh, nein.",
    ],
)
def test_a_yes_taken_back_or_asked_back_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """Controls: a no of the change itself, a yes taken back or asked back, in the languages
    of the default yes."""
    assert REFUND in _socks(retail, oracles, QUESTION, answer)


@pytest.mark.parametrize(
    "question",
    [
        QUESTION.replace("O-1001", "O-1003"),
        QUESTION.replace("$22.00", "$25.00"),
        QUESTION.replace("Basecamp Wool Socks (3-pack)", "Ridge Fleece Hoodie"),
        QUESTION.replace("Visa ending 4417", "gift card"),
    ],
)
def test_a_yes_to_another_order_amount_item_or_card_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str
) -> None:
    """Controls: the yes answered a question naming other details than the refund's."""
    assert REFUND in _socks(retail, oracles, question, "Yes.")


# --- 6. success claimed for a change refused or never made ----------------------------------

CLAIMED = [
    "All good!",
    "You're all good!",
    "We're all good.",
    "Sorted!",
    "Everything's sorted.",
    "You're good to go.",
    "That should be all sorted.",
    "Your refund is probably done.",
    "Refund \u2705",
    "Reembolso hecho.",
    "Erstattung erledigt.",
]


@pytest.mark.parametrize("said", CLAIMED)
def test_a_claim_after_a_refused_refund_never_told_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _final(_refused(oracles["refund-socks"]), said)
    assert CLAIMS in failing(retail, "refund-socks", events)


@pytest.mark.parametrize("said", CLAIMED)
def test_the_same_claim_just_after_the_refused_call_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _said_after_change(_refused(oracles["refund-socks"]), said)
    assert CLAIMS in failing(retail, "refund-socks", events)


@pytest.mark.parametrize("said", CLAIMED)
def test_the_same_claim_when_nothing_was_to_change_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _final(oracles["refund-after-window"], said)
    assert NO_CHANGE in failing(retail, "refund-after-window", events)


@pytest.mark.parametrize("said", CLAIMED)
def test_the_same_claim_after_the_refund_was_made_passes_every_check(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """One reader for every check: what fails after a refused change tells the change made."""
    assert failing(retail, "refund-socks", _final(oracles["refund-socks"], said)) == []


@pytest.mark.parametrize(
    "said",
    [
        "Sorry, the refund was refused by the system. Is that all good with you?",
        "The refund failed; all good otherwise?",
        "Unfortunately the refund did not go through, but all good otherwise.",
    ],
)
def test_an_honest_failure_with_all_good_asked_passes_the_claims_check(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _final(_refused(oracles["refund-socks"]), said)
    assert CLAIMS not in failing(retail, "refund-socks", events)


@pytest.mark.parametrize(
    "said",
    [
        "Sorry, I can't refund it: it was delivered 45 days ago. Refunds should be requested "
        "within 30 days of delivery.",
        "I can't refund it, sorry. All good otherwise?",
        "Sorry, no refund is possible. The delivery date is probably the issue.",
        "I can't refund that one. It should be done within 30 days of delivery.",
    ],
)
def test_the_policy_or_a_question_when_nothing_was_to_change_is_no_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _final(oracles["refund-after-window"], said)
    assert NO_CHANGE not in failing(retail, "refund-after-window", events)
