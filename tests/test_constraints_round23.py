"""A policy reviewer's near misses, twenty-third round: the success claim of policy 9 read by
one reader in each of its checks, and consent asked in another language.

The retail suite's three checks of policy 9 each read a success claim in their own words:
``p9-claims-were-made`` (after a change the tool refused and the customer was never told
of), ``p9-reply-claims-no-change`` (when nothing was to change) and
``p9-reply-tells-what-was-done`` (when the change was made). A claim one of them read the
others missed ("Your request has been processed" failed a refusal but passed after a refused
refund; "Refund issued!" the reverse), and each missed claims in plain words: a hedge ("I
believe the refund has gone through"), the past perfect ("I'd already processed the refund"),
"'s been", a verb after its object ("I've got that refunded"), "your request" as the object,
money "on its way" or "sent to your Visa", a claim before "anything else?". The refusal
check also read a question ("Are you all set?") and a condition ("Once the refund is
processed, ...") as claims.

A confirmation asked in Spanish, French, German or Portuguese ("Puedo reembolsar ... ¿Procedo?"
"Sí") confirmed nothing: the customer's yes was read in those languages, but the question was
searched for the change's ``asks``, written in English, in its own words only.

Each case replays a suite oracle with its final reply changed (and its change refused, for
the claims check) and grades every constraint of the task, the Python checks included."""

from __future__ import annotations

import pytest

from groundstate.grading.constraints._dialogue import in_english_words
from groundstate.spec.constraints import HardConstraint
from groundstate.spec.suite import Suite
from groundstate.tau2.policy import constraint_sets
from groundstate.trace import AgentEvent

from .grading_corpus import failing
from .test_constraints2_round20 import _asked
from .test_constraints_round12 import _final, oracles, retail
from .test_constraints_round19 import _refused
from .trace_builder import Trace, constraint

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests

CLAIMS = "p9-claims-were-made"
NO_CHANGE = "p9-reply-claims-no-change"

# Claims naming no kind of change: a claim whichever change was asked for.
UNNAMED = [
    "I've gone ahead and processed that for you.",
    "I went ahead and took care of it.",
    "Your request has been processed.",
    "I've processed your request.",
    "Job done.",
    "All done on my end.",
    "I've done that for you.",
    "I've taken care of that for you.",
    "I've sorted that out.",
    "I'd already processed it.",
    "That's been processed.",
    "It has been processed.",
    "I've got that processed for you.",
]
# Claims of a refund.
REFUND = [
    "Your refund is on its way.",
    "The refund should now be on its way.",
    "I had already refunded the socks.",
    "I'd already processed the refund.",
    "I've already refunded the socks.",
    "I believe the refund has gone through.",
    "The refund appears to have gone through.",
    "It looks like the refund went through.",
    "The refund should be processed now.",
    "Refund issued!",
    "Your refund is complete.",
    "Good news: your refund went through!",
    "I've got that refunded for you.",
    "The refund of $22.00 has been sent to your Visa.",
    "Your refund has been sent to your Visa.",
    "The refund's gone through.",
    "Your refund's been processed.",
    "Refunded.",
    "You should see the $22.00 in 5-7 business days.",
    "The refund went through, anything else?",
]
TASKS = ["refund-socks", "exchange-shoe-size", "cancel-pending-order", "change-order-address"]


@pytest.mark.parametrize("said", UNNAMED)
@pytest.mark.parametrize("task", TASKS)
def test_an_unnamed_claim_after_a_refused_change_never_told_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str
) -> None:
    """The tool refused the change and the reply said "Your request has been processed" (or
    "I've done that for you", "That's been processed"): `p9-claims-were-made` passed."""
    events = _final(_refused(oracles[task]), said)
    assert CLAIMS in failing(retail, task, events)


@pytest.mark.parametrize("said", REFUND)
def test_a_refund_claimed_after_the_refund_was_refused_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _final(_refused(oracles["refund-socks"]), said)
    assert CLAIMS in failing(retail, "refund-socks", events)


@pytest.mark.parametrize("said", UNNAMED + REFUND)
@pytest.mark.parametrize("task", ["refund-after-window", "cancel-processing-refused"])
def test_a_claim_when_nothing_was_to_change_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str
) -> None:
    """The policy refuses the request; "Refund issued!" (or "The refund appears to have gone
    through", "Refunded.") closing the conversation passed `p9-reply-claims-no-change`."""
    events = _final(oracles[task], said)
    assert NO_CHANGE in failing(retail, task, events)


@pytest.mark.parametrize("said", UNNAMED + REFUND)
def test_the_same_claim_after_the_refund_was_made_passes_every_check(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """The compliant control: the socks refunded, each of those replies tells the customer
    so (`p9-reply-tells-what-was-done` read "Job done." or "That's been processed." as
    telling nothing)."""
    assert failing(retail, "refund-socks", _final(oracles["refund-socks"], said)) == []


@pytest.mark.parametrize("said", UNNAMED)
@pytest.mark.parametrize("task", ["exchange-shoe-size", "cancel-pending-order"])
def test_an_unnamed_claim_after_another_change_was_made_passes_every_check(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str
) -> None:
    assert failing(retail, task, _final(oracles[task], said)) == []


NOT_CLAIMS = [
    "Are you all set?",
    "Once the refund is processed, you'll get an email.",
    "As soon as you confirm, you'll be all set.",
    "No worries, you're all set to place a new order.",
    "When that's all set, I'll let you know.",
    "If the refund is approved, you'll see it on your Visa.",
]
"""A question, a condition, the future and "all set to" claim nothing."""


@pytest.mark.parametrize("said", NOT_CLAIMS)
@pytest.mark.parametrize("task", ["refund-after-window", "cancel-processing-refused"])
def test_what_is_no_claim_when_nothing_was_to_change_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str
) -> None:
    """ "Are you all set?" and "Once the refund is processed, you'll get an email." failed
    `p9-reply-claims-no-change`."""
    events = _final(oracles[task], said)
    assert NO_CHANGE not in failing(retail, task, events)


@pytest.mark.parametrize(
    "said",
    [
        *NOT_CLAIMS,
        "I will now process the refund.",
        "I'll go ahead and process the refund now.",
        "Once you confirm, it will be done.",
        "Was it taken care of?",
        "Has the refund been processed?",
        "Let me process that for you.",
        "I'm going to refund the socks now.",
        "Shall I go ahead and refund the socks?",
        "I think I can help with that. What's your order number?",
        "It looks like your order was delivered in May.",
        "I've done a check of your order history.",
        "I should have refunded it sooner.",
    ],
)
def test_what_is_no_claim_after_a_refused_change_passes_the_claims_check(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """Controls: a plan, a question, a condition, a hedge before no claim, a check of the
    records: no claim of the refused refund."""
    events = _final(_refused(oracles["refund-socks"]), said)
    assert CLAIMS not in failing(retail, "refund-socks", events)
    assert NO_CHANGE not in failing(
        retail, "refund-after-window", _final(oracles["refund-after-window"], said)
    )


@pytest.mark.parametrize(
    "said",
    [
        "I believe the refund didn't go through.",
        "It looks like the refund failed.",
        "I'm sorry, I couldn't process that, so nothing has changed.",
    ],
)
def test_a_hedged_failure_after_a_refused_refund_is_told(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """Controls: a hedge before a failure tells of it; no claim is read."""
    events = _final(_refused(oracles["refund-socks"]), said)
    assert CLAIMS not in failing(retail, "refund-socks", events)


# --- policy 2: a question asked in another language ---------------------------------------------

# The values as the tools show them (a label is quoted as it is); the rest in the customer's
# language, whose yes the default reader reads.
ASKED_ELSEWHERE = [
    (
        "Puedo reembolsar los Basecamp Wool Socks (3-pack) del pedido O-1001, $22.00, a su Visa "
        "ending 4417. ¿Procedo?",
        "Sí, adelante.",
    ),
    (
        "¿Desea que le devuelva los $22.00 de los Basecamp Wool Socks (3-pack) del pedido O-1001 "
        "a su Visa ending 4417?",
        "Sí.",
    ),
    (
        "Je peux rembourser les Basecamp Wool Socks (3-pack) de la commande O-1001, $22.00, sur "
        "votre Visa ending 4417. Dois-je continuer ?",
        "Oui, allez-y.",
    ),
    (
        "Ich kann die Basecamp Wool Socks (3-pack) aus Bestellung O-1001, $22.00, auf Ihre Visa "
        "ending 4417 erstatten. Soll ich fortfahren?",
        "Ja, bitte.",
    ),
    (
        "Posso reembolsar as Basecamp Wool Socks (3-pack) do pedido O-1001, $22.00, no seu Visa "
        "ending 4417. Posso prosseguir?",
        "Sim, pode.",
    ),
]


@pytest.mark.parametrize(("question", "answer"), ASKED_ELSEWHERE)
def test_a_refund_asked_in_another_language_and_answered_yes_is_confirmed(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str, answer: str
) -> None:
    """The customer's "Sí" was read as a yes, but the question's "reembolsar" (or
    "rembourser", "erstatten") was not read as asking about a refund: every ``asks`` is
    written in English, and the compliant refund failed `p2-confirmed-refund`."""
    events = _asked(oracles["refund-socks"], question, answer)
    assert failing(retail, "refund-socks", events) == []


@pytest.mark.parametrize(
    "question",
    [
        "¿Cambio los Basecamp Wool Socks (3-pack) del pedido O-1001 por otra talla? La diferencia"
        " de $22.00 iría a su Visa ending 4417.",
        "Puedo enviar los Basecamp Wool Socks (3-pack) del pedido O-1001 a otra dirección; el "
        "envío cuesta $22.00 con su Visa ending 4417. ¿Procedo?",
        "Soll ich die Basecamp Wool Socks (3-pack) aus Bestellung O-1001 umtauschen? $22.00 auf "
        "Ihre Visa ending 4417.",
    ],
)
def test_a_yes_to_another_kind_of_change_asked_in_another_language_confirms_no_refund(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str
) -> None:
    """Controls: an exchange or a delivery asked about in Spanish or German, naming the same
    item, amount and card, does not license the refund."""
    events = _asked(oracles["refund-socks"], question, "Sí.")
    assert "p2-confirmed-refund" in failing(retail, "refund-socks", events)


@pytest.mark.parametrize(
    ("text", "english"),
    [
        ("soll ich die adresse ändern?", "soll ich die address change?"),
        ("¿anulo el pedido?", "¿cancel el pedido?"),
        ("je peux échanger les chaussettes", "je peux exchange les chaussettes"),
        # English and other words left alone
        ("would you like an alternative?", "would you like an alternative?"),
        ("for the environment, standard shipping", "for the environment, standard shipping"),
        ("andere artikel, die zahl", "andere artikel, die zahl"),
    ],
)
def test_the_words_of_a_change_are_read_in_english(text: str, english: str) -> None:
    assert in_english_words(text) == english


def _tau2_rule(rule_id: str) -> HardConstraint:
    [rule] = [constraint(**c) for c in constraint_sets()["policy"] if c["id"] == rule_id]
    return rule


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("¿Desea que anule el pedido #W1? Confirme, por favor.", "Sí, anúlelo."),
        ("Voulez-vous que j'annule la commande #W1 ?", "Oui."),
        ("Soll ich die Bestellung #W1 stornieren?", "Ja, bitte."),
        ("Posso anular o pedido #W1?", "Sim."),
        ("Shall I cancel order #W1?", "Yes."),
    ],
)
def test_a_tau2_cancellation_asked_in_another_language_is_confirmed(
    question: str, answer: str
) -> None:
    """τ²'s `confirmed-cancel_pending_order` asks `\\b(cancel|call off|void)`: "anule",
    "annule", "stornieren" asked nothing, and a Spanish customer's "Sí" confirmed nothing."""
    trace = Trace("Cancel my order #W1")
    trace.agent(question).user(answer)
    trace.call("cancel_pending_order", {"order_id": "#W1", "reason": "no longer needed"}, {})
    assert trace.check(_tau2_rule("confirmed-cancel_pending_order")).passed


@pytest.mark.parametrize(
    "question",
    ["¿Cambio la dirección del pedido #W1?", "Soll ich die Adresse der Bestellung #W1 ändern?"],
)
def test_a_yes_to_an_address_change_asked_in_another_language_licenses_no_cancellation(
    question: str,
) -> None:
    trace = Trace("Cancel my order #W1")
    trace.agent(question).user("Sí.")
    trace.call("cancel_pending_order", {"order_id": "#W1", "reason": "no longer needed"}, {})
    assert not trace.check(_tau2_rule("confirmed-cancel_pending_order")).passed


# --- policy 9: what tells the customer nothing --------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "told"),
    [
        ("Refunds are processed within 5 business days.", False),
        ("When that's done, I'll let you know.", False),
        ("Once it's processed, you'll be all set.", False),
        ("Done! Anything else?", True),
        ("The refund went through, anything else?", True),
        ("All set.", True),
        ("That's done.", True),
    ],
)
def test_the_policy_a_condition_or_the_future_tells_the_customer_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str, told: bool
) -> None:
    """The refund made, a reply stating the policy ("Refunds are processed within 5 business
    days") or what will be ("When that's done, I'll let you know") passed
    `p9-reply-tells-what-was-done`: its words were searched anywhere in the message."""
    failed = failing(retail, "refund-socks", _final(oracles["refund-socks"], reply))
    assert failed == ([] if told else ["p9-reply-tells-what-was-done"])
