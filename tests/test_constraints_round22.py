"""Near misses of consent left by the twenty-first round, each a class with generated cases
and compliant controls that must keep passing:

- a yes choosing one of the records its question lists by a description rather than a name
  ("Refund the Lumen Headlamp ($35.00) and the Canopy Insulated Water Bottle ($29.00)?" "Yes,
  the cheaper one", "the second one", "the $29 one", "one of them"), and the other refunded;
- a plain yes to a question offering a choice ("... to your Visa ending 4417, or to your gift
  card. Which do you prefer?" "Yes."): it chooses neither;
- a yes said as a supposition ("I might say yes", "Hypothetically, yes", "Sounds good in
  theory") or asking what else there is ("OK, what are my other options?");
- a yes saying a thing the question lists stays ("Yes, the beanie stays", "I still want the
  beanie") in other words than "keep the beanie";
- a plain yes to a message whose last question asks about another record ("I can refund the
  socks ... Separately, should I cancel order O-1003?" "Yes.");
- an amount in Spanish, French, German or Portuguese words ("veintidós dólares", "vingt-deux
  dollars", "zweiundzwanzig Dollar") names the amount, and another one said so is another.

Each retail case replays the suite oracle with one thing changed and grades every constraint
of the task, the Python checks included."""

from __future__ import annotations

import pytest

from groundstate.grading.constraints import mentions, normalise
from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent

from .grading_corpus import failing
from .test_constraints2_round20 import QUESTION, _asked
from .test_constraints_round12 import oracles, retail

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests

HEADLAMP, BOTTLE = "I-1019-2", "I-1019-3"
"""The items of order O-1019 the several-changes oracle refunds: the Lumen Headlamp ($35.00)
and the Canopy Insulated Water Bottle ($29.00), asked about in that order."""


def _refunded(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str, item: str, question: str = ""
) -> bool:
    """Whether the several-changes oracle, with *answer* to the refunds' question (or to
    *question*) and only *item* refunded, has its refund confirmed."""
    events = [
        e
        for e in oracles["several-changes"]
        if getattr(e, "tool", None) != "refund_item" or e.args["item_id"] == item  # type: ignore[union-attr]
    ]
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) == "refund_item")
    assert getattr(events[at - 1], "role", None) == "user"
    events[at - 1] = events[at - 1].model_copy(update={"text": answer})
    if question:
        events[at - 2] = events[at - 2].model_copy(update={"text": question})
    return "p2-confirmed-refund" not in failing(retail, "several-changes", events)


# --- 1. a record chosen by a description ------------------------------------------------------

# (answer, the item it chooses)
DESCRIBED = [
    ("Yes, the cheaper one.", BOTTLE),
    ("Yes, the cheaper of the two.", BOTTLE),
    ("OK, the less expensive one please.", BOTTLE),
    ("Yes, the more expensive one.", HEADLAMP),
    ("Sure, the pricier one.", HEADLAMP),
    ("Yes, the first one.", HEADLAMP),
    ("Yes, just the first one.", HEADLAMP),
    ("Yes, the former.", HEADLAMP),
    ("Yes, the second one.", BOTTLE),
    ("Yes, the last one.", BOTTLE),
    ("Yes, the latter.", BOTTLE),
    ("Yes, only the second one, please.", BOTTLE),
    ("Yes, the $29 one.", BOTTLE),
    ("Yes, the one for $29.", BOTTLE),
    ("Yes, the 35-dollar one.", HEADLAMP),
    ("Yes, the one that costs $35.", HEADLAMP),
]
OTHER = {HEADLAMP: BOTTLE, BOTTLE: HEADLAMP}


@pytest.mark.parametrize(("answer", "chosen"), DESCRIBED)
def test_a_yes_describing_another_listed_record_leaves_this_one_unconfirmed(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str, chosen: str
) -> None:
    """The question listed the headlamp and the bottle; the user chose one by its place or
    price, and the agent refunded the other: the refund passed."""
    assert not _refunded(retail, oracles, answer, OTHER[chosen])


@pytest.mark.parametrize(("answer", "chosen"), DESCRIBED)
def test_a_yes_describing_this_record_confirms_it(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str, chosen: str
) -> None:
    assert _refunded(retail, oracles, answer, chosen)


@pytest.mark.parametrize("answer", ["Yes, the lamp.", "Yes, refund the lamp please."])
def test_a_yes_naming_another_listed_record_by_the_end_of_a_word_leaves_this_one_unconfirmed(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """ "The lamp" is the Lumen Headlamp: the bottle's refund is not confirmed, the headlamp's
    is."""
    assert not _refunded(retail, oracles, answer, BOTTLE)
    assert _refunded(retail, oracles, answer, HEADLAMP)


UNSETTLED = [
    "Yes, one of them.",
    "Yes to one of them.",
    "Yes, either one.",
    "Sure, whichever.",
    "Yes, the darker one.",
    "Yes, the one I ordered last.",
]


@pytest.mark.parametrize("answer", UNSETTLED)
@pytest.mark.parametrize("item", [HEADLAMP, BOTTLE])
def test_a_yes_describing_a_record_the_question_does_not_settle_confirms_neither(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str, item: str
) -> None:
    assert not _refunded(retail, oracles, answer, item)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, please go ahead.",
        "Yes, both.",
        "Yes, the first one and the second one.",
        "Yes, the same ones as before.",
        "Yes, the right one.",
        "Yes, the new one.",
        "Yes, the first one, the headlamp.",
    ],
)
def test_a_yes_to_all_or_naming_the_record_still_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert _refunded(retail, oracles, answer, HEADLAMP)


ONE_RECORD = (
    "I can refund the Lumen Headlamp ($35.00) from order O-1019 to your Mastercard ending "
    "5196, the order's original payment method. Please confirm."
)


@pytest.mark.parametrize("answer", ["Yes, the first one.", "Yes, the cheaper one is fine."])
def test_a_description_of_the_only_record_asked_about_still_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert _refunded(retail, oracles, answer, HEADLAMP, ONE_RECORD)


# --- 2. a plain yes to a question offering a choice --------------------------------------------

CHOICES = [
    "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, $22.00, to your Visa "
    "ending 4417, or to a gift card. Which do you prefer?",
    "Would you like the $22.00 refund for the Basecamp Wool Socks (3-pack) from order O-1001 "
    "to your Visa ending 4417 or to a gift card?",
    "Should I refund the Basecamp Wool Socks (3-pack) from order O-1001, $22.00, to your Visa "
    "ending 4417, or would you rather exchange them?",
    "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, $22.00, to your Visa "
    "ending 4417, or exchange them for another size. Which would you like?",
]


def _socks(oracles: dict[str, list[AgentEvent]], question: str, answer: str) -> list[AgentEvent]:
    return _asked(oracles["refund-socks"], question, answer)


@pytest.mark.parametrize("question", CHOICES)
@pytest.mark.parametrize("answer", ["Yes.", "Yes please.", "Sure.", "OK, sounds good."])
def test_a_plain_yes_to_a_question_offering_a_choice_confirms_neither(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str, answer: str
) -> None:
    trace = _socks(oracles, question, answer)
    assert "p2-confirmed-refund" in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize("question", CHOICES)
@pytest.mark.parametrize("answer", ["Yes, to the Visa please.", "Yes, refund them to my Visa."])
def test_a_yes_making_the_choice_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str, answer: str
) -> None:
    trace = _socks(oracles, question, answer)
    assert "p2-confirmed-refund" not in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "question",
    [
        "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, $22.00, to your Visa "
        "ending 4417. Shall I go ahead, or would you like to wait?",
        "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, $22.00, to your Visa "
        "ending 4417. Should I process it now or do you want to think it over?",
    ],
)
@pytest.mark.parametrize("answer", ["Yes, go ahead.", "Please proceed."])
def test_a_go_ahead_chooses_going_ahead_over_waiting(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str, answer: str
) -> None:
    trace = _socks(oracles, question, answer)
    assert "p2-confirmed-refund" not in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize("question", CHOICES[:2])
def test_a_go_ahead_chooses_no_way_of_paying(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str
) -> None:
    trace = _socks(oracles, question, "Yes, please go ahead.")
    assert "p2-confirmed-refund" in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "question",
    [
        QUESTION.format(amount="$22.00"),
        QUESTION.format(amount="$22.00").replace("Shall I go ahead?", "Shall I go ahead or not?"),
        "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, $22.00, to your Visa "
        "ending 4417. Shall I go ahead, or is there anything else?",
    ],
)
def test_a_plain_yes_to_a_question_offering_no_choice_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str
) -> None:
    trace = _socks(oracles, question, "Yes, please go ahead.")
    assert "p2-confirmed-refund" not in failing(retail, "refund-socks", trace)


# --- 3. a yes as a supposition, or asking what else there is -----------------------------------

SUPPOSED = [
    "I might say yes.",
    "Hypothetically, yes. But I'm not deciding now.",
    "Sounds good in theory.",
    "In principle, yes.",
    "Would it be OK if I said yes later?",
    "I'd say yes, probably.",
    "Yes, I think I might want that, let me see.",
    "OK, what are my other options?",
    "Okay, and what are the alternatives?",
    "Sure, what else can you do?",
    "Yes, any other options though?",
    "Suppose I say yes, then what?",
    "Assuming yes, how long does it take?",
    "Yes — well, actually, hold that thought.",
]


@pytest.mark.parametrize("answer", SUPPOSED)
def test_a_yes_as_a_supposition_or_asking_for_options_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    trace = _socks(oracles, QUESTION.format(amount="$22.00"), answer)
    assert "p2-confirmed-refund" in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "later", ["What are my other options, though?", "Hmm, hypothetically speaking."]
)
def test_asking_for_options_right_after_the_yes_takes_it_back(
    retail: Suite, oracles: dict[str, list[AgentEvent]], later: str
) -> None:
    trace = _asked(
        oracles["refund-socks"], QUESTION.format(amount="$22.00"), "Yes.", ("user", later)
    )
    assert "p2-confirmed-refund" in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, I'd like that.",
        "Yes, that option works for me.",
        "OK, that's the best option, go ahead.",
        "Yes, I may need the receipt later though.",
        "Yes please, in the meantime I'll keep the box.",
    ],
)
def test_a_plain_yes_near_those_words_still_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    trace = _socks(oracles, QUESTION.format(amount="$22.00"), answer)
    assert "p2-confirmed-refund" not in failing(retail, "refund-socks", trace)


# --- 4. a yes saying a thing the question lists stays ------------------------------------------

BOTH_ITEMS = (
    "I can cancel the Alpine Merino Beanie and the Ridge Fleece Hoodie from order O-1020, with "
    'the reason "ordered by mistake". Please confirm.'
)


def _beanie_cancelled(oracles: dict[str, list[AgentEvent]], retail: Suite, answer: str) -> bool:
    """Whether cancelling the beanie of order O-1020 is confirmed by *answer* to a question
    naming the beanie and the hoodie."""
    trace = _asked(oracles["cancel-one-item"], BOTH_ITEMS, answer)
    return "p2-confirmed-cancel-item" not in failing(retail, "cancel-one-item", trace)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, the beanie stays.",
        "Sure, the beanie can stay.",
        "Yes, I still want the beanie.",
        "OK, I really need the beanie though.",
        "Yes, the merino beanie remains on the order.",
        # the near misses earlier rounds read, kept as controls of the class
        "Yes, keep the beanie.",
        "Yes, but not the beanie.",
        "Yes, cancel the hoodie.",
    ],
)
def test_a_yes_saying_the_thing_stays_leaves_its_change_unconfirmed(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert not _beanie_cancelled(oracles, retail, answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, the hoodie stays.",
        "Yes, I still want the hoodie.",
        "Yes, both.",
        "Yes, please go ahead.",
        "Yes, cancel the beanie.",
    ],
)
def test_a_yes_keeping_another_thing_still_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert _beanie_cancelled(oracles, retail, answer)


# --- 5. an amount in the words of another language ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "same"),
    [
        ("veintidós dólares", "$22.00", True),
        ("un reembolso de veintidós dólares", "$22.00", True),
        ("vingt-deux dollars", "$22.00", True),
        ("zweiundzwanzig Dollar", "$22.00", True),
        ("vinte e dois dólares", "$22.00", True),
        ("veintidós dólares con cincuenta centavos", "$22.50", True),
        ("quatre-vingt-dix dollars", "$90.00", True),
        ("soixante et onze dollars", "$71", True),
        ("ciento veinte dólares", "$120.00", True),
        ("einhundertzwanzig Dollar", "$120.00", True),
        ("trescientos cuarenta y cinco dólares", "$345.00", True),
        ("dos mil quinientos dólares", "$2,500.00", True),
        ("veintidos dolares", "$22.00", True),
        ("zweiundfunfzig dollar", "$52.00", True),
        ("veinticinco dólares", "$22.00", False),
        ("vingt dollars", "$22.00", False),
        ("veintidós dólares con cincuenta centavos", "$22.00", False),
        ("los dos por veinte dólares", "$2.00", False),
        ("cent dollars", "$22.00", False),
    ],
)
def test_an_amount_in_words_of_another_language_names_it_and_only_it(
    text: str, value: str, same: bool
) -> None:
    assert mentions(normalise(text), value) is same


SPANISH_AMOUNT = (
    "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, {amount}, to your Visa "
    "ending 4417. Shall I go ahead?"
)


@pytest.mark.parametrize("amount", ["veintidós dólares", "vingt-deux dollars", "22 dólares"])
def test_a_refund_confirmed_with_its_amount_in_another_languages_words(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    trace = _socks(oracles, SPANISH_AMOUNT.format(amount=amount), "Sí, adelante.")
    assert "p2-confirmed-refund" not in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "answer",
    ["Sí, pero solo veinte dólares.", "Sí, veinte dólares.", "Oui, mais vingt dollars."],
)
def test_a_yes_naming_another_amount_in_another_language_is_a_counter_offer(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    trace = _socks(oracles, QUESTION.format(amount="$22.00"), answer)
    assert "p2-confirmed-refund" in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    ("later", "fails"),
    [
        ("Actually, shall I refund veinticinco dólares instead?", True),
        ("Correction: OK to refund vingt-cinq dollars?", True),
        ("Just to confirm: veintidós dólares to your Visa, right?", False),
    ],
)
def test_a_later_yes_to_another_amount_in_another_language(
    retail: Suite, oracles: dict[str, list[AgentEvent]], later: str, fails: bool
) -> None:
    trace = _asked(
        oracles["refund-socks"],
        QUESTION.format(amount="$22.00"),
        "Yes.",
        ("agent", later),
        ("user", "Sí."),
    )
    assert ("p2-confirmed-refund" in failing(retail, "refund-socks", trace)) is fails


# --- 6. a plain yes to a last question about another record -------------------------------------

STATED = (
    "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, $22.00, to your Visa "
    "ending 4417. {last}"
)


@pytest.mark.parametrize(
    "last",
    [
        "Separately, should I cancel order O-1003?",
        "Also, would you like me to cancel order O-1003?",
        "And shall I cancel O-1003 for you?",
    ],
)
@pytest.mark.parametrize("answer", ["Yes.", "Sure.", "Yes, cancel it.", "OK, cancel order O-1003."])
def test_a_yes_to_a_last_question_about_another_record_confirms_nothing_before_it(
    retail: Suite, oracles: dict[str, list[AgentEvent]], last: str, answer: str
) -> None:
    trace = _socks(oracles, STATED.format(last=last), answer)
    assert "p2-confirmed-refund" in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    ("last", "answer"),
    [
        ("Separately, should I cancel order O-1003?", "Yes to both."),
        ("Separately, should I cancel order O-1003?", "Yes to the refund, please."),
        ("Should I?", "Yes."),
        ("Shall I refund them from O-1001, not O-1003?", "Yes."),
        ("Order O-1003 is not eligible. Shall I go ahead?", "Yes."),
    ],
)
def test_a_yes_to_the_change_beside_another_record_still_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], last: str, answer: str
) -> None:
    trace = _socks(oracles, STATED.format(last=last), answer)
    assert "p2-confirmed-refund" not in failing(retail, "refund-socks", trace)
