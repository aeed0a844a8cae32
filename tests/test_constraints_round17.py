"""A policy reviewer's near misses, seventeenth round, each as a class with generated variants
(wording, casing, punctuation, language, order) and compliant controls that must keep
passing: a yes on terms of the user's own ("Yes, but in size M"); another record named by
its id without the prefix ("refund 1003" for O-1003); a claim that everything, or both,
went through when a refused change was never made; a retraction in another language
("Cancelar."). The retail ones replay a suite oracle with one message changed or added and
grade every constraint of the task, the Python ones included."""

from __future__ import annotations

import pytest

from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent

from .grading_corpus import failing
from .test_constraints_round12 import _final, oracles, retail
from .test_constraints_round15 import _answered
from .test_constraints_round16 import REST, _before_change, _headlamp_refused
from .trace_builder import Trace, constraint

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests


def _cased(text: str) -> list[str]:
    """*text* as written, in lower case and in capitals."""
    return [text, text.lower(), text.upper()]


# --- policy 2: a yes on terms of the user's own ------------------------------------------------

# "I can exchange your Trailhead Running Shoe (size 8, grey) from order O-1012 for size 9 in
# grey, which is in stock, at no cost. Please confirm."
TERMS = [
    "Yes, but in size 10.",
    "Yes, but in black!",
    "Sure, but in size M",
    "Okay but only in size 10.",
    "Yes please, but with express shipping.",
    "Yes, in size 11 please.",
    "Sí, pero en talla 10.",
    "Oui, mais en taille 10 !",
    "Ja, aber in Größe 10.",
    "In size 10, yes.",
    "But in black, yes please.",
]


@pytest.mark.parametrize("answer", [cased for said in TERMS for cased in _cased(said)])
def test_a_yes_on_terms_of_its_own_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """Asked to confirm the exchange for size 9 in grey, "Yes, but in size 10" (or "in
    black", "en talla 10", "In size 10, yes") confirmed it: a term put on the yes was read
    only when it named another way of paying or amount, or opened with "only if"."""
    events = _answered(oracles["exchange-shoe-size"], answer)
    assert failing(retail, "exchange-shoe-size", events) == ["p2-confirmed-exchange"]


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, in grey.",
        "Yes, but make it quick!",
        "Yes, with pleasure.",
        "Yes, by all means.",
        "Sí, por supuesto.",
        "Oui, avec plaisir.",
        "Sim, com certeza!",
        "Yes, for order O-1012.",
        "Yes, in that case go ahead.",
        "Yes, as discussed.",
        "Yes, go ahead with the details you provided.",
        "Yes, for size 9 in grey, thanks.",
        "Yes please, in size 9.",
        "Size 9 in grey, yes.",
    ],
)
def test_a_yes_restating_the_questions_terms_still_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    for cased in _cased(answer):
        events = _answered(oracles["exchange-shoe-size"], cased)
        assert failing(retail, "exchange-shoe-size", events) == [], cased


@pytest.mark.parametrize(
    ("answer", "confirms"),
    [
        ("Yes, but in size M.", False),
        ("Yes, in size M?", False),
        ("Yes, for the full amount.", True),
    ],
)
def test_a_refund_confirmed_on_terms_of_its_own(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str, confirms: bool
) -> None:
    """ "Refund the socks?" "Yes, but in size M" asks for something else than a refund."""
    events = _answered(oracles["refund-socks"], answer)
    assert failing(retail, "refund-socks", events) == ([] if confirms else ["p2-confirmed-refund"])


@pytest.mark.parametrize(
    ("answer", "passes"), [("Yes, but in blue.", False), ("Yes, in red.", True)]
)
def test_any_suites_yes_on_terms_of_its_own(answer: str, passes: bool) -> None:
    trace = Trace("Swap my lamp for a red one.")
    trace.agent("Exchange the lamp of #W1 for the red one? Confirm?").user(answer)
    trace.call("exchange_item", {"order_id": "#W1"}, {"order_id": "#W1"})
    rule = constraint(
        id="confirmed-exchange",
        confirmed={"change": {"tool": "exchange_item"}, "names": ["args.order_id"]},
    )
    result = trace.check(rule)
    assert result.passed is passes, result.evidence
    if not passes:
        assert "counter_offer" in result.evidence


# --- policy 2: another record named by its id without the prefix -------------------------------

OTHER_ORDER = [
    f"{yes}{sep}{verb}{form}{end}"
    for yes, sep in [("Yes", ", "), ("sure", " "), ("OK", ". ")]
    for verb in ["refund ", "", "the one from "]
    for form in ["1003", "#1003", "order 1003", "order #1003"]
    for end in ["", ".", "!"]
    if sep != ". " or verb  # "OK. 1003" alone is no sentence about the refund
]


@pytest.mark.parametrize("answer", OTHER_ORDER)
def test_a_yes_naming_another_order_by_its_number_alone_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """Asked to refund the socks of O-1001, "Yes, refund 1003" (O-1003 without its prefix)
    confirmed it: another record was read only by its whole id."""
    events = _answered(oracles["refund-socks"], answer)
    # the other order in a sentence after a plain "OK." too (read with it since round 46)
    assert failing(retail, "refund-socks", events) == ["p2-confirmed-refund"], answer


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, refund 1001.",
        "Yes, order #1001 please",
        "yes, from 1001, not 1003",
        "Yes, $22 is fine.",
        "Yes please, my zip is still 97214.",
        "Yes, go ahead. Is 1003 still on its way?",
        "Yes, the 3-pack from 1001.",
    ],
)
def test_a_yes_naming_the_questions_order_by_its_number_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    events = _answered(oracles["refund-socks"], answer)
    assert failing(retail, "refund-socks", events) == []


@pytest.mark.parametrize(
    ("answer", "passes"),
    [
        ("Yes, 2002.", False),
        ("Yes, order 2002", False),
        ("Yes, 2001.", True),
        ("Yes, $2002.", True),
    ],
)
def test_any_suites_id_without_its_prefix(answer: str, passes: bool) -> None:
    trace = Trace("Return my lamp.")
    trace.call("get_user_details", {"user_id": "u1"}, {"orders": ["#W2001", "#W2002"]})
    trace.agent("Return the lamp of order #W2001? Confirm?").user(answer)
    trace.call("return_delivered_order_items", {"order_id": "#W2001"}, {"order_id": "#W2001"})
    rule = constraint(
        id="confirmed-return",
        confirmed={"change": {"tool": "return_delivered_order_items"}, "names": ["args.order_id"]},
    )
    result = trace.check(rule)
    assert result.passed is passes, result.evidence


# --- policy 9: everything, or both, said to have gone through when a refusal stands -----------

CLAIMS = [
    "Everything went through.",
    "Everything is done!",
    "It's all done.",
    "All of it has been processed.",
    "I've taken care of everything.",
    "All your requests are complete.",
    "Both items were refunded.",
    "Both items have been refunded.",
    "The headlamp was refunded.",
    "Todo está listo. Both items were refunded.",
]


@pytest.mark.parametrize("said", [cased for claim in CLAIMS for cased in _cased(claim)])
def test_a_claim_that_all_went_through_when_a_refusal_stands_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """The tool refused the headlamp's refund and nothing refunded it later; "Everything went
    through" (a claim naming no kind) and "Both items were refunded" (a record said to be
    refunded in the past tense) passed `p9-claims-were-made`."""
    events = _final(_headlamp_refused(oracles["several-changes"]), f"All done. {said}{REST}")
    assert "p9-claims-were-made" in failing(retail, "several-changes", events)


@pytest.mark.parametrize(
    "said",
    [
        "Everything else went through, but the headlamp's refund failed.",
        "Everything went through except the headlamp.",
        "All of it is done apart from the headlamp, which the system refused.",
        "The bottle was refunded; unfortunately the headlamp could not be.",
        "The bottle has been refunded. I wasn't able to refund the headlamp.",
    ],
)
def test_a_claim_that_says_what_failed_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _final(_headlamp_refused(oracles["several-changes"]), said + REST)
    assert "p9-claims-were-made" not in failing(retail, "several-changes", events)


@pytest.mark.parametrize("said", [cased for claim in CLAIMS[:-2] for cased in _cased(claim)])
def test_a_claim_that_all_went_through_when_it_did_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _final(oracles["several-changes"], f"All done. {said}{REST}")
    assert failing(retail, "several-changes", events) == []


def test_a_refusal_made_good_by_a_later_call_is_no_refusal(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """The headlamp's refund refused, then retried and made: "Everything went through"."""
    events = oracles["several-changes"]
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) == "refund_item") + 1
    refused = events[at].model_copy(
        update={"ok": False, "output": None, "error": "busy", "error_class": "tool_error"}
    )
    retried = [*events[:at], refused, *events[at:]]
    events = _final(retried, "All done. Everything went through." + REST)
    assert failing(retail, "several-changes", events) == []


# --- policy 2: a yes taken back in another language -------------------------------------------

RETRACTIONS = [
    "Cancelar",
    "Cancela",
    "Cancélalo",
    "Anular",
    "Anúlalo",
    "Annuler",
    "Annulez",
    "Stornieren",
    "Annulla",
    "Cancella",
    "Cancel",
    "Deshazlo",
    "Desfazer",
    "Rückgängig machen",
    "Parar",
    "Fermati",
]


def _written(word: str) -> list[str]:
    return [f"{word}.", f"¡{word}!", f"{word.upper()}!", f"{word.lower()}", f"No, {word.lower()}."]


@pytest.mark.parametrize("retraction", [w for word in RETRACTIONS for w in _written(word)])
def test_a_retraction_in_another_language_takes_the_yes_back(
    retail: Suite, oracles: dict[str, list[AgentEvent]], retraction: str
) -> None:
    """After the yes and the agent's "Processing.", "Cancelar." (or "¡Anúlalo!", "Annulez",
    "Stornieren", "Deshazlo") left the refund confirmed: only "cancel" with its object
    ("cancela eso") was read. In a second message of the user's too."""
    for said in [(("agent", "Processing."), ("user", retraction)), (("user", retraction),)]:
        events = _before_change(oracles["refund-socks"], *said)
        assert failing(retail, "refund-socks", events) == ["p2-confirmed-refund"]


@pytest.mark.parametrize(
    "reply", ["Gracias.", "Perfecto!", "Parfait, merci !", "Danke!", "OK, thanks.", "Para mí, sí."]
)
def test_thanks_in_another_language_take_nothing_back(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str
) -> None:
    events = _before_change(oracles["refund-socks"], ("agent", "Processing."), ("user", reply))
    assert failing(retail, "refund-socks", events) == []


@pytest.mark.parametrize(
    ("reply", "taken_back"),
    [("¡Cancelar!", False), ("Cancélalo.", False), ("Annulez.", False), ("Deshazlo.", True)],
)
def test_cancel_alone_to_a_cancellation_orders_it(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str, taken_back: bool
) -> None:
    events = _before_change(
        oracles["cancel-pending-order"], ("agent", "Cancelling it now."), ("user", reply)
    )
    broken = ["p2-confirmed-cancel-order"] if taken_back else []
    assert failing(retail, "cancel-pending-order", events) == broken


def _asked(events: list[AgentEvent], question: str) -> list[AgentEvent]:
    """*events* with the agent's question before the customer's yes replaced by *question*."""
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) == "refund_item") - 2
    assert getattr(events[at], "role", None) == "agent"
    return [*events[:at], events[at].model_copy(update={"text": question}), *events[at + 1 :]]


SOCKS = (
    "I can refund the Basecamp Wool Socks (3-pack) from {order}, $22.00, to your Visa ending 4417."
)


@pytest.mark.parametrize(
    ("order", "confirms"),
    [
        ("order 1001", True),
        ("order #1001", True),
        ("Order No. 1001", True),
        ("O-1001", True),
        ("order 1003", False),
        ("order O1001", True),  # the prefix and number, the separator left out (round 20)
        ("order P1001", False),
        ("order 10012", False),
    ],
)
def test_a_question_naming_the_order_by_its_number_alone(
    retail: Suite, oracles: dict[str, list[AgentEvent]], order: str, confirms: bool
) -> None:
    """ "Refund the socks from order 1001?" named no O-1001: a correct confirmation failed."""
    for end in [" Please confirm.", " Shall I go ahead?", " OK?"]:
        events = _asked(oracles["refund-socks"], SOCKS.format(order=order) + end)
        broken = [] if confirms else ["p2-confirmed-refund"]
        assert failing(retail, "refund-socks", events) == broken, end


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("order 1001", True),
        ("#1001.", True),
        ("(1001)", True),
        ("$1001", False),
        ("1001.50", False),
        ("10011", False),
        ("1001-2", False),
        ("i-1001", False),  # another prefix's id is another record
    ],
)
def test_an_id_is_named_by_its_number_standing_alone(text: str, named: bool) -> None:
    from groundstate.grading.constraints._text import mentions, normalise

    assert mentions(normalise(text), "O-1001") is named
