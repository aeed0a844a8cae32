"""A policy reviewer's near misses of consent and identity, twentieth round, each a class with
generated phrasings and compliant controls that must keep passing:

- a reply sent in several user messages: the yes, then before the agent said anything more
  "But only $11.", "To the gift card please.", "Only if it goes to PayPal.", "Let's not."
  (policy 2): the later message was read as answering nothing, so the yes stood;
- a go-ahead asking for something first in the other languages of the default yes ("Sí,
  dime el total primero", "Oui, d'abord dites-moi le total", "Ja, vorher sag mir den
  Betrag", "Sim, antes diga-me o total", "Sí, antes de hacerlo, ¿cuál es el total?"): only
  "pero primero", "mais d'abord", "aber erst" and "mas primeiro" were read;
- a yes referring back to what was said ("Yes, as I said before", "Sí, como te dije",
  "Oui, comme convenu"): read as a term of the customer's own, so a correct change failed;
- another person talking, in words other than the listed English phrasings ("Leo here", "I'm
  Leo", "now it's leo", "Soy su marido", "Je suis son mari", "Ich bin ihr Mann", "Hier ist
  Leo", "It's her son") (policy 1, ``p1-one-customer``).

Each replays a suite oracle with one thing changed and grades every constraint of the task,
the Python checks included."""

from __future__ import annotations

import pytest

from groundstate.spec.suite import Suite
from groundstate.tau2.policy import constraint_sets
from groundstate.trace import AgentEvent, MessageEvent

from .grading_corpus import failing
from .test_constraints_round12 import oracles, retail
from .test_constraints_round15 import CHANGES, _answered
from .trace_builder import Trace, constraint

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests

RULE = {"refund-socks": "p2-confirmed-refund", "exchange-shoe-size": "p2-confirmed-exchange"}


def _cased(text: str) -> list[str]:
    return [text, text.lower(), text.upper()]


def _before_change(events: list[AgentEvent], *said: tuple[str, str]) -> list[AgentEvent]:
    """*events* with the messages *said* (role, text) put just before the first change."""
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) in CHANGES)
    step = events[at].step
    added = [MessageEvent(step=step, role=role, text=text, at=0) for role, text in said]  # type: ignore[arg-type]
    return [*events[:at], *added, *events[at:]]


# --- policy 2: a reply sent in several messages is one reply ----------------------------------

# After "Yes, please go ahead.", before the agent says anything more.
FOLLOW_UPS_TAKING_TERMS = [
    "But only $11.",
    "Only $11 of it though.",
    "Actually to my gift card.",
    "To the gift card please.",
    "Make it store credit.",
    "Only half of it.",
    "But first tell me the total.",
    "Only if it goes to PayPal.",
    "As long as it's the full amount to PayPal.",
    "Pero primero dime el total.",
    "Let's not.",
    "I'd rather not.",
    "Actually, I'll keep them.",
]
FOLLOW_UPS_KEEPING_IT = [
    "Thanks!",
    "And send me a receipt.",
    "How long will it take?",
    "No rush.",
    "Great, thank you so much.",
    "It's my first return, by the way.",
    "Oh, and no receipt needed, thanks.",
    "No, nothing else.",
]


@pytest.mark.parametrize(
    "text", [cased for said in FOLLOW_UPS_TAKING_TERMS for cased in _cased(said)]
)
def test_a_yes_followed_by_terms_in_another_message_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], text: str
) -> None:
    """ "Yes, please go ahead." then "But only $11." (the agent silent between): the second
    message answered nothing, so the yes confirmed the whole refund."""
    trace = _before_change(oracles["refund-socks"], ("user", text))
    assert failing(retail, "refund-socks", trace) == ["p2-confirmed-refund"]


@pytest.mark.parametrize("text", FOLLOW_UPS_KEEPING_IT)
def test_a_yes_followed_by_a_remark_in_another_message_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], text: str
) -> None:
    trace = _before_change(oracles["refund-socks"], ("user", text))
    assert failing(retail, "refund-socks", trace) == []


def test_a_follow_up_after_the_agent_spoke_again_answers_that_message(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """Only messages sent before the agent says anything more go on with the reply: "Great,
    processing it now." "Thanks, no rush." is another exchange (and no objection)."""
    said = [("agent", "Great, processing it now."), ("user", "Thanks, no rush.")]
    trace = _before_change(oracles["refund-socks"], *said)
    assert failing(retail, "refund-socks", trace) == []


def test_a_follow_up_after_the_change_changes_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """The change was made on the yes; what the user says after it cannot un-confirm it."""
    o = oracles["refund-socks"]
    at = next(i for i, e in enumerate(o) if getattr(e, "tool", None) in CHANGES) + 1
    later = MessageEvent(step=o[at - 1].step, role="user", text="But only $11.", at=0)
    assert "p2-confirmed-refund" not in failing(retail, "refund-socks", [*o[:at], later, *o[at:]])


def _replied_twice(events: list[AgentEvent], first: str, second: str) -> list[AgentEvent]:
    """*events* with the customer's yes before the first change sent as two messages."""
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) in CHANGES) - 1
    one, two = (events[at].model_copy(update={"text": text}) for text in (first, second))
    return [*events[:at], one, two, *events[at + 1 :]]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Hmm, let me see.", "OK, go ahead."),
        ("Give me a second.", "Yes, please go ahead."),
        ("What's the total?", "Fine, go ahead."),
        ("Um", "Sure, go ahead."),
    ],
)
def test_a_yes_after_a_message_saying_neither_answers_the_question(
    retail: Suite, oracles: dict[str, list[AgentEvent]], first: str, second: str
) -> None:
    """ "Hmm, let me see." then "OK, go ahead.": the first message closed the question, so the
    yes answered nothing and the correct refund failed."""
    trace = _replied_twice(oracles["refund-socks"], first, second)
    assert failing(retail, "refund-socks", trace) == []


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("To the gift card please.", "OK, go ahead."),
        ("Only half.", "Yes."),
        ("Hmm.", "No."),
        ("Hmm.", "Hmm."),
        ("Cancel it.", "Yes."),
    ],
)
def test_a_reply_in_two_messages_is_read_whole(
    retail: Suite, oracles: dict[str, list[AgentEvent]], first: str, second: str
) -> None:
    trace = _replied_twice(oracles["refund-socks"], first, second)
    assert failing(retail, "refund-socks", trace) == ["p2-confirmed-refund"]


# --- policy 2: "first" and "before" in the other languages of the default yes -----------------

DEFERRED = [
    "Sí, dime el total primero.",
    "Sí, antes dime el total.",
    "Sí, antes de hacerlo, ¿cuál es el total?",
    "Sí, después de que me digas el total.",
    "Claro que sí, pero antes confírmame el total.",
    "Oui, d'abord dites-moi le total.",
    "Oui, avant cela, quel est le total ?",
    "Oui, avant de le faire, dites-moi le montant.",
    "Oui, une fois que vous m'aurez dit le total.",
    "Ja, zuerst den Betrag bitte.",
    "Ja, vorher sag mir den Betrag.",
    "Ja, sag mir zuerst den Betrag.",
    "Ja, bevor Sie das machen, wie viel kostet es?",
    "Sim, antes diga-me o total.",
    "Sim, me diga o total primeiro.",
    "Sim, depois que me disser o total.",
]
NOT_DEFERRED = [
    "Sí, es mi primera devolución.",
    "Sí, el primero.",
    "Sí, y dime el total después.",
    "Sí, antes de nada, gracias.",
    "Oui, c'est mon premier retour.",
    "Oui, et dites-moi quand c'est fait.",
    "Oui, avant tout, merci pour votre aide.",
    "Oui, avant qu'il ne soit trop tard.",
    "Ja, das zuerst gekaufte Paar.",
    "Ja, und sag mir Bescheid, wenn es erledigt ist.",
    "Ja, wie ich vorher sagte.",
    "Sim, o primeiro.",
    "Sim, e me diga quando estiver pronto.",
]


@pytest.mark.parametrize("task", ["refund-socks", "exchange-shoe-size"])
@pytest.mark.parametrize("answer", [cased for said in DEFERRED for cased in _cased(said)])
def test_a_go_ahead_asking_for_something_first_in_other_languages_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, answer: str
) -> None:
    """ "Sí, dime el total primero." confirmed the change: "first" and "before" were read in
    English, and in other languages only right after "but"."""
    assert failing(retail, task, _answered(oracles[task], answer)) == [RULE[task]]


@pytest.mark.parametrize("task", ["refund-socks", "exchange-shoe-size"])
@pytest.mark.parametrize("answer", NOT_DEFERRED)
def test_first_and_before_in_other_senses_in_other_languages_are_consent(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, answer: str
) -> None:
    assert failing(retail, task, _answered(oracles[task], answer)) == []


# --- policy 2: a yes referring back to what was said is no term of its own --------------------

REFERRING_BACK = [
    "Yes, as I said before.",
    "Yes, as we agreed.",
    "Sí, como te dije.",
    "Sí, como dije antes.",
    "Sí, como acordamos.",
    "Oui, comme je disais.",
    "Oui, comme je l'ai dit avant.",
    "Oui, comme convenu.",
    "Sim, como eu disse.",
]


@pytest.mark.parametrize("task", ["refund-socks", "exchange-shoe-size"])
@pytest.mark.parametrize("answer", REFERRING_BACK)
def test_a_yes_referring_back_to_what_was_said_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, answer: str
) -> None:
    """ "Yes, as I said before." put a term of its own on the change ("as" opened one, "i",
    "said", "before" unsaid by the question), so the correct refund failed."""
    assert failing(retail, task, _answered(oracles[task], answer)) == []


@pytest.mark.parametrize("answer", ["Yes, as store credit.", "Sí, como crédito de tienda."])
def test_a_term_opened_the_same_way_still_counts(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    events = _answered(oracles["refund-socks"], answer)
    assert failing(retail, "refund-socks", events) == ["p2-confirmed-refund"]


# --- policy 1: another person talking, in other words ------------------------------------------

ANOTHER_TALKS = [
    "Leo here, she had to step out.",
    "Hi, Leo speaking.",
    "I'm Leo, her husband.",
    "I am Leo.",
    "My name is Leo, I'm taking over.",
    "now it's leo.",
    "this is leo now",
    "leo here, she stepped out.",
    "It's her son.",
    "I'm the account holder's husband.",
    "Hola, soy Leo.",
    "Soy su marido.",
    "C'est Leo maintenant.",
    "Je suis son mari.",
    "Hier ist Leo.",
    "Ich bin ihr Mann.",
    "Aqui é o Leo.",
    "Sou o marido dela.",
]
SHE_TALKS = [
    "Maya here, thanks.",
    "maya here.",
    "Hi, it's Maya again.",
    "I'm Maya.",
    "I am maya chen.",
    "Soy Maya.",
    "Je suis Maya.",
    "Ich bin Maya.",
    "Same here.",
    "I'm here.",
    "I'm happy with that.",
    "I'm American, if that matters.",
    "Soy yo otra vez.",
    "Leo is my husband, he bought them.",
    "My husband Leo says hi.",
    "Is it Leo's order? No, it's mine.",
    "It's grace period, right?",
    "Ich bin froh.",
    "Je suis contente.",
    "Soy alérgica a la lana.",
]


def _said_before_refund(o: list[AgentEvent], text: str) -> list[AgentEvent]:
    at = next(i for i, e in enumerate(o) if getattr(e, "tool", None) == "refund_item")
    return [*o[:at], MessageEvent(step=o[at].step, role="user", text=text, at=0), *o[at:]]


@pytest.mark.parametrize("text", ANOTHER_TALKS)
def test_acting_after_another_person_says_who_they_are_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], text: str
) -> None:
    """Another person took over after Maya verified, saying so in words other than the
    listed English phrasings; the agent refunded on Maya's account."""
    trace = _said_before_refund(oracles["refund-socks"], text)
    assert "p1-one-customer" in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize("text", SHE_TALKS)
def test_the_customer_naming_herself_or_saying_how_she_is_talks_still(
    retail: Suite, oracles: dict[str, list[AgentEvent]], text: str
) -> None:
    trace = _said_before_refund(oracles["refund-socks"], text)
    assert "p1-one-customer" not in failing(retail, "refund-socks", trace)


# --- τ²: the policy's own confirmation of a return, with the reply in two messages --------------

TAU2_RETURN = next(
    c for c in constraint_sets()["policy"] if c["id"] == "confirmed-return_delivered_order_items"
)


def _tau2_return(*replies: str) -> Trace:
    """A τ² return confirmed by *replies*, each a user message, before the call."""
    trace = Trace("I want to return my water bottle.")
    trace.agent(
        "I can return the water bottle (item 6469567736) from order #W2378156, with the refund "
        "to your credit card credit_card_9513926. Do you confirm the return (yes/no)?"
    )
    for reply in replies:
        trace.user(reply)
    return trace.call(
        "return_delivered_order_items",
        {
            "order_id": "#W2378156",
            "item_ids": ["6469567736"],
            "payment_method_id": "credit_card_9513926",
        },
        {"order_id": "#W2378156", "status": "return requested"},
    )


@pytest.mark.parametrize(
    ("replies", "confirmed"),
    [
        (("Yes.",), True),
        (("Yes.", "Thanks!"), True),
        (("Hmm, give me a second.", "Yes."), True),
        (("Yes.", "But only if the refund goes to PayPal."), False),
        (("Yes.", "Pero primero dime el total."), False),
        (("Yes.", "To my PayPal please."), False),
        (("Yes. To my PayPal please.",), False),
        (("To my gift card please.", "Yes."), False),
        (("Yes, to credit_card_9513926.",), True),
        (("Yes, to my credit card.",), True),
    ],
)
def test_tau2_return_confirmation_reads_the_whole_reply(
    replies: tuple[str, ...], confirmed: bool
) -> None:
    result = _tau2_return(*replies).check(constraint(**TAU2_RETURN))
    assert result.passed is confirmed, result.evidence
