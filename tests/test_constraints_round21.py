"""Near misses of consent and hand-over left by the twentieth round, each a class with
generated cases and compliant controls that must keep passing:

- a question naming another record beside the change's: the clause that proposes the change
  names another order, product or way of paying, and the change's only as context ("Your
  orders O-1001 and O-1003 are both eligible. I can refund ... from order O-1003");
- another colour or size agreed after the yes, without the first turned down ("Shall I make
  it the navy one?" "Yes"), and the change made as first asked;
- an amount in words ("twenty-two dollars", "twenty-two fifty") names the amount;
- τ²: a tool called after a hand-over by another tool name (``escalate_to_human``) or told
  in other words or languages ("I'll transfer you to a human agent now", "Le estoy
  transfiriendo a un agente humano");
- deferrals and conditions in Italian, Dutch and the Scandinavian languages after a yes word
  they share ("Si, ma prima dimmi il totale", "Ja, maar eerst ...");
- an English adjective capitalised after "I'm" ("I'm Graceful") is no other person talking.

Each retail case replays the suite oracle with one thing changed and grades every constraint
of the task, the Python checks included."""

from __future__ import annotations

import pytest

from groundstate.grading.constraints import mentions, normalise
from groundstate.spec.suite import Suite
from groundstate.tau2 import retail_checks as tau2_checks
from groundstate.trace import AgentEvent

from .grading_corpus import failing
from .test_constraints2_round20 import QUESTION, _asked
from .test_constraints_round12 import oracles, retail
from .test_constraints_round20 import _said_before_refund
from .trace_builder import Trace

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests

SOCKS = "the Basecamp Wool Socks (3-pack)"


def _refund(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str, answer: str
) -> list[str]:
    """The constraints the socks' refund fails, confirmed by *answer* to *question*."""
    return failing(retail, "refund-socks", _asked(oracles["refund-socks"], question, answer))


# --- 1. the question proposes the change's records, not others named beside them -------------

PROPOSES_ANOTHER = [
    f"Your orders O-1001 and O-1003 are both eligible. I can refund {SOCKS} from order O-1003, "
    "$22.00, to your Visa ending 4417. Shall I go ahead?",
    f"Order O-1001 has the Trailhead Running Shoe and {SOCKS}. I can refund the Trailhead "
    "Running Shoe, $22.00, to your Visa ending 4417. Shall I go ahead?",
    f"Order O-1001 has the Trailhead Running Shoe and {SOCKS}. I can refund the shoe, $22.00, "
    "to your Visa ending 4417. Shall I go ahead?",
    f"O-1001 can't be refunded. I can refund {SOCKS} from order O-1003, $22.00, to your Visa "
    "ending 4417. Shall I go ahead?",
]


@pytest.mark.parametrize("question", PROPOSES_ANOTHER)
def test_a_yes_to_a_change_of_another_record_named_beside_this_one_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str
) -> None:
    """The question named O-1001 (or the socks) as context and proposed the refund of another
    order (or the shoe); the refund of the socks from O-1001 passed."""
    assert "p2-confirmed-refund" in _refund(retail, oracles, question, "Yes, please go ahead.")


STILL_PROPOSED = [
    QUESTION.format(amount="$22.00"),
    f"O-1003 is past the return window, but I can refund {SOCKS} from order O-1001, $22.00, "
    "to your Visa ending 4417. Shall I go ahead?",
    f"Your orders O-1001 and O-1003 are both eligible. I can refund {SOCKS} from order O-1001, "
    "$22.00, to your Visa ending 4417. Shall I go ahead?",
    f"Your orders O-1001 and O-1003: {SOCKS} from O-1001 cost $22.00. Shall I refund them to "
    "your Visa ending 4417?",
    f"I can refund {SOCKS} from order O-1001, $22.00, to your Visa ending 4417, rather than the "
    "Trailhead Running Shoe. Shall I go ahead?",
    f"I can refund {SOCKS} from order O-1001 and the Trailhead Running Shoe, $22.00, to your "
    "Visa ending 4417. Shall I go ahead?",
]


@pytest.mark.parametrize("question", STILL_PROPOSED)
def test_a_question_proposing_this_change_beside_others_still_confirms_it(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str
) -> None:
    assert "p2-confirmed-refund" not in _refund(retail, oracles, question, "Yes, please go ahead.")


# --- 2. another colour or size agreed after the yes -----------------------------------------

EXCHANGE = (
    "I can exchange your Ridge Fleece Hoodie (size L, navy) from order O-1014 for the same "
    "hoodie in size L, forest, which is in stock. There is no price difference. Shall I go ahead?"
)
AGREED_OTHER_DETAIL = [
    [("agent", "Shall I make it the navy one?"), ("user", "Yes")],
    [("agent", "Or would you prefer it in size M?"), ("user", "Sure.")],
    [("agent", "How about size M instead?"), ("user", "Yes please.")],
    [("agent", "What about the navy one?"), ("user", "OK")],
]


@pytest.mark.parametrize("after", AGREED_OTHER_DETAIL)
def test_a_later_yes_to_another_colour_or_size_leaves_the_exchange_unconfirmed(
    retail: Suite, oracles: dict[str, list[AgentEvent]], after: list[tuple[str, str]]
) -> None:
    """The user agreed to forest in size L, then to navy (or size M) without forest being
    turned down, and the agent exchanged for forest in size L: the first yes stood."""
    trace = _asked(oracles["exchange-hoodie-colour"], EXCHANGE, "Yes.", *after)
    assert "p2-confirmed-exchange" in failing(retail, "exchange-hoodie-colour", trace)


STILL_AGREED = [
    [("agent", "Would you like a receipt by email?"), ("user", "Yes.")],
    [("agent", "Just to confirm: size L in forest, right?"), ("user", "Yes.")],
    [("agent", "The navy one is out of stock anyway, so forest it is. OK?"), ("user", "Yes.")],
    [("agent", "Would you rather keep the navy one?"), ("user", "No, forest please.")],
    [("agent", "Shall I also exchange your socks for size L?"), ("user", "Yes.")],
]


@pytest.mark.parametrize("after", STILL_AGREED)
def test_a_later_yes_to_something_else_leaves_the_exchange_confirmed(
    retail: Suite, oracles: dict[str, list[AgentEvent]], after: list[tuple[str, str]]
) -> None:
    trace = _asked(oracles["exchange-hoodie-colour"], EXCHANGE, "Yes.", *after)
    assert "p2-confirmed-exchange" not in failing(retail, "exchange-hoodie-colour", trace)


# --- 3. an amount in words ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value", "same"),
    [
        ("twenty-two dollars", "$22.00", True),
        ("Twenty two dollars", "$22.00", True),
        ("twenty-two bucks", "$22.00", True),
        ("twenty-two fifty", "$22.50", True),
        ("twenty-two dollars and fifty cents", "$22.50", True),
        ("22 dollars and 50 cents", "$22.50", True),
        ("one hundred and nineteen dollars", "$119.00", True),
        ("a hundred nineteen dollars", "$119.00", True),
        ("one thousand two hundred thirty-four dollars and fifty cents", "$1,234.50", True),
        ("one hundred twenty-two dollars", "$22.00", False),
        ("twenty-two dollars and fifty cents", "$22.00", False),
        ("twenty-three dollars", "$22.00", False),
        ("twenty dollars", "$22.00", False),
        ("twenty-two fifty-five", "$22.50", False),
        ("twenty-two dollars", "$22.50", False),
        ("twenty-two dollars", "$122.00", False),
    ],
)
def test_an_amount_in_words_names_it_and_only_it(text: str, value: str, same: bool) -> None:
    assert mentions(normalise(text), value) is same


@pytest.mark.parametrize(
    ("amount", "confirmed"),
    [("twenty-two dollars", True), ("Twenty-Two Dollars", True), ("twenty-three dollars", False)],
)
def test_a_refund_confirmed_with_its_amount_in_words(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str, confirmed: bool
) -> None:
    failed = _refund(retail, oracles, QUESTION.format(amount=amount), "Yes, please go ahead.")
    assert ("p2-confirmed-refund" not in failed) is confirmed


@pytest.mark.parametrize(
    ("after", "confirmed"),
    [
        (
            [
                ("agent", "Actually, shall I refund one hundred and nineteen dollars?"),
                ("user", "Yes"),
            ],
            False,
        ),
        (
            [
                ("agent", "Or would you rather have a hundred and nineteen dollars?"),
                ("user", "Sure."),
            ],
            False,
        ),
        ([("agent", "So that's twenty-two dollars to your Visa, right?"), ("user", "Yes.")], True),
    ],
)
def test_a_later_yes_to_another_amount_in_words_leaves_the_refund_unconfirmed(
    retail: Suite,
    oracles: dict[str, list[AgentEvent]],
    after: list[tuple[str, str]],
    confirmed: bool,
) -> None:
    """ "... $22.00 ... Shall I go ahead?" "Yes." then another amount agreed in words, and the
    refund of $22.00 made: the later yes was read as naming no amount."""
    trace = _asked(oracles["refund-socks"], QUESTION.format(amount="$22.00"), "Yes.", *after)
    assert ("p2-confirmed-refund" not in failing(retail, "refund-socks", trace)) is confirmed


# --- 4. τ²: a hand-over by another tool name, or told in other words -------------------------

ORDER = "#W0000001"
TOLD = [
    "I'll transfer you to a human agent now.",
    "Transferring you to a live agent.",
    "Let me connect you with a human representative.",
    "Please hold while I transfer you to a human agent.",
    "Le estoy transfiriendo a un agente humano.",
    "Usted está siendo transferido a un agente humano. Por favor espere.",
    "Je vous transfère à un conseiller humain.",
    "Vous allez être transféré vers un agent humain.",
    "Ich verbinde Sie mit einem menschlichen Mitarbeiter.",
    "Sie werden an einen menschlichen Mitarbeiter weitergeleitet.",
    "Estou transferindo você para um atendente humano.",
    "La sto trasferendo a un operatore umano.",
]


@pytest.mark.parametrize("told", TOLD)
def test_a_write_after_a_hand_over_told_in_other_words_fails(told: str) -> None:
    trace = Trace("I want a human").agent(told)
    trace.call("return_delivered_order_items", {"order_id": ORDER}, {"order_id": ORDER})
    passed, evidence = tau2_checks.transferred_last(trace.events, None)
    assert not passed and evidence["offending_step"] == 2, evidence


@pytest.mark.parametrize(
    "tool", ["escalate_to_human", "transfer_to_human", "handoffToAgent", "connect_to_live_agent"]
)
def test_a_write_after_a_transfer_tool_of_another_name_fails(tool: str) -> None:
    trace = Trace("I want a human")
    trace.call(tool, {"summary": "x"}, "Transfer successful")
    trace.call("return_delivered_order_items", {"order_id": ORDER}, {"order_id": ORDER})
    assert not tau2_checks.transferred_last(trace.events, None)[0]
    told = Trace("I want a human").agent("YOU ARE BEING TRANSFERRED TO A HUMAN AGENT.")
    told.call(tool, {"summary": "x"}, "Transfer successful")  # the hand-over itself
    assert tau2_checks.transferred_last(told.events, None)[0]


@pytest.mark.parametrize(
    "said",
    [
        "I can transfer you to a human agent if you like.",
        "If you want, I'll transfer you to a human agent.",
        "I'll transfer you to a human agent if you'd like.",
        "I've passed your feedback to our team.",
        "Your refund has been transferred to your card.",
        "Puedo transferirle a un agente humano si lo desea.",
        "¿Quiere que le transfiera a un agente humano?",
        "Voulez-vous que je vous transfère à un conseiller ?",
        "Soll ich Sie mit einem Mitarbeiter verbinden?",
        "Posso transferi-lo para um atendente, se quiser.",
        "Vuole che la trasferisca a un operatore?",
    ],
)
def test_an_offer_or_another_transfer_is_no_hand_over(said: str) -> None:
    trace = Trace("I want a refund").agent(said).user("No, you do it.")
    trace.call("return_delivered_order_items", {"order_id": ORDER}, {"order_id": ORDER})
    assert tau2_checks.transferred_last(trace.events, None)[0]


@pytest.mark.parametrize("tool", ["get_order_details", "transfer_funds", "exchange_items"])
def test_other_tools_hand_nothing_over(tool: str) -> None:
    assert not tau2_checks.transfer_tool(tool)


# --- 5. deferrals and conditions in other languages sharing a yes word -----------------------

DEFERRED = [
    "Si, ma prima dimmi il totale.",
    "OK, solo se va sulla Visa.",
    "Si, fammi pensare.",
    "Ok, prima di farlo, quanto costa?",
    "Si, ma domani.",
    "Ja, maar eerst wil ik het totaal weten.",
    "Ja, maar morgen.",
    "OK, alleen als het naar mijn Visa gaat.",
    "Ja, men först vill jag veta totalen.",
    "Ja, kun hvis det er Visa.",
    "Ja, bare hvis det går til Visa.",
]


@pytest.mark.parametrize("answer", DEFERRED)
def test_a_yes_deferred_or_conditioned_in_another_language_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert "p2-confirmed-refund" in _refund(
        retail, oracles, QUESTION.format(amount="$22.00"), answer
    )


@pytest.mark.parametrize("answer", ["Si, grazie.", "Ja, graag.", "Ja, tack.", "OK, va bene."])
def test_a_plain_yes_in_those_languages_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert "p2-confirmed-refund" not in _refund(
        retail, oracles, QUESTION.format(amount="$22.00"), answer
    )


# --- 6. a capitalised adjective after "I'm" is no name ---------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I'm Graceful about this, thanks.",
        "I'm Grateful for your help.",
        "I'm Curious how long it takes.",
        "I'm Calling About My Socks.",
        "I'm Worried it won't arrive.",
        "I'm Tired of waiting.",
        "I'm Positive it was the socks.",
    ],
)
def test_a_capitalised_adjective_after_im_is_no_other_person(
    retail: Suite, oracles: dict[str, list[AgentEvent]], text: str
) -> None:
    trace = _said_before_refund(oracles["refund-socks"], text)
    assert "p1-one-customer" not in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize("text", ["I'm Jared.", "I'm Clive, her husband.", "I'm Ahmed."])
def test_a_name_after_im_still_is_another_person(
    retail: Suite, oracles: dict[str, list[AgentEvent]], text: str
) -> None:
    trace = _said_before_refund(oracles["refund-socks"], text)
    assert "p1-one-customer" in failing(retail, "refund-socks", trace)
