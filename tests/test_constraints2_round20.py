"""Near misses of consent left by the twentieth round's first pass, each a class with
generated cases and compliant controls that must keep passing:

- details changed after the yes: the user agreed, after the yes naming the change, to other
  details of it ("Or would you prefer it on your gift card instead of the Visa?" "Sure";
  "Shall I refund $25.00 instead?" "Yes"), and the agent made the change as first asked;
  a yes given before the agent said the details confirms nothing (a pin);
- values the same after normalisation: an id written without its separator ("O1001" for
  O-1001, "W-2002" for #W2002) and a number the tool took plainly (1234.5) named as an amount
  ("$1,234.50") failed a correct change; another id or amount still does not name it;
- τ²: a tool called after the agent told the user they were being transferred to a human,
  with no transfer call (or before it), passed ``transfer-last``;
- a decision put off then made: "Let me think." "OK, go ahead." (no agent message between)
  confirmed nothing; "Let me think." alone still confirms nothing.

Each retail case replays the suite oracle with one thing changed and grades every constraint
of the task, the Python checks included."""

from __future__ import annotations

from typing import Any

import pytest

from groundstate.grading.constraints import mentions, normalise
from groundstate.spec.suite import Suite
from groundstate.tau2 import retail_checks as tau2_checks
from groundstate.trace import AgentEvent, MessageEvent

from .grading_corpus import failing
from .test_constraints_round12 import oracles, retail
from .test_constraints_round15 import CHANGES
from .trace_builder import Trace, constraint

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests

QUESTION = (
    "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, {amount}, to your Visa "
    "ending 4417. Shall I go ahead?"
)


def _asked(
    events: list[AgentEvent], question: str, answer: str, *after: tuple[str, str]
) -> list[AgentEvent]:
    """*events* with the question and yes before the first change replaced by *question* and
    *answer*, and the messages *after* (role, text) put between the yes and the change."""
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) in CHANGES)
    ask, yes = events[at - 2], events[at - 1]
    assert getattr(ask, "role", None) == "agent" and getattr(yes, "role", None) == "user"
    added = [MessageEvent(step=yes.step, role=r, text=t, at=0) for r, t in after]  # type: ignore[arg-type]
    asked = [ask.model_copy(update={"text": question}), yes.model_copy(update={"text": answer})]
    return [*events[: at - 2], *asked, *added, *events[at:]]


def _refund(oracles: dict[str, list[AgentEvent]], *after: tuple[str, str]) -> list[AgentEvent]:
    return _asked(oracles["refund-socks"], QUESTION.format(amount="$22.00"), "Yes.", *after)


# --- 1. the change is what was agreed last --------------------------------------------------

AGREED_OTHERWISE = [
    [("agent", "Or would you prefer it on your gift card instead of the Visa?"), ("user", "Sure.")],
    [("agent", "Shall I put it on the gift card rather than the Visa?"), ("user", "Yes")],
    [("agent", "Actually, shall I refund it to your gift card instead?"), ("user", "Yes.")],
    [("agent", "Shall I refund it to PayPal instead?"), ("user", "Yes please.")],
    [("agent", "Actually, I could refund $25.00. Shall I refund $25.00?"), ("user", "Yes.")],
    [("agent", "Correction: the refund would be $20.00. OK to refund $20.00?"), ("user", "OK")],
]


@pytest.mark.parametrize("after", AGREED_OTHERWISE)
def test_a_yes_to_other_details_after_the_yes_leaves_the_change_unconfirmed(
    retail: Suite, oracles: dict[str, list[AgentEvent]], after: list[tuple[str, str]]
) -> None:
    """The question named $22.00 to the Visa and was answered yes; then the user agreed to
    the gift card (or $25.00) instead, and the agent refunded $22.00 to the Visa: the first
    yes stood and the refund passed."""
    failed = failing(retail, "refund-socks", _refund(oracles, *after))
    assert "p2-confirmed-refund" in failed


STILL_AGREED = [
    [("agent", "Would you like a receipt by email?"), ("user", "Yes.")],
    [("agent", "Just to double check: that's $22.00 to your Visa, right?"), ("user", "Yes.")],
    [("agent", "So that's to your Visa, not the gift card, correct?"), ("user", "Yes.")],
    [
        ("agent", "Would you rather have it on your gift card instead of the Visa?"),
        ("user", "No, the Visa is fine."),
    ],
    [("agent", "Shall I also refund the Trailhead Running Shoe to your Visa?"), ("user", "Yes.")],
    [("agent", "Shall I refund $22.00 to the Visa ending 4417 now?"), ("user", "Yes.")],
]


@pytest.mark.parametrize("after", STILL_AGREED)
def test_a_later_yes_to_something_else_leaves_the_confirmation(
    retail: Suite, oracles: dict[str, list[AgentEvent]], after: list[tuple[str, str]]
) -> None:
    assert "p2-confirmed-refund" not in failing(retail, "refund-socks", _refund(oracles, *after))


@pytest.mark.parametrize(
    "details",
    [
        "Refunding the Basecamp Wool Socks (3-pack) from order O-1001, $22.00, to your Visa "
        "ending 4417 now.",
        "To confirm: Basecamp Wool Socks (3-pack), order O-1001, $22.00, Visa ending 4417.",
    ],
)
def test_a_yes_before_the_details_were_stated_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], details: str
) -> None:
    """A pin: "Shall I refund the socks?" "Yes." and only then the amount and the card."""
    trace = _asked(oracles["refund-socks"], "Shall I refund the socks?", "Yes.", ("agent", details))
    assert failing(retail, "refund-socks", trace) == ["p2-confirmed-refund"]


# --- 2. the same value after normalisation, and only the same -------------------------------


@pytest.mark.parametrize(
    ("order", "same"),
    [
        ("O-1001", True),
        ("O1001", True),
        ("o1001", True),
        ("O_1001", True),
        ("#O1001", True),
        ("order 1001", True),
        ("O-1011", False),
        ("P1001", False),
        ("O10011", False),
    ],
)
def test_an_order_id_spelt_without_its_separator_names_it(
    retail: Suite, oracles: dict[str, list[AgentEvent]], order: str, same: bool
) -> None:
    question = QUESTION.format(amount="$22.00").replace("order O-1001", order)
    trace = _asked(oracles["refund-socks"], question, "Yes, please go ahead.")
    assert ("p2-confirmed-refund" not in failing(retail, "refund-socks", trace)) is same


@pytest.mark.parametrize(
    ("text", "value", "same"),
    [
        ("order O1001", "O-1001", True),
        ("order o_1001", "O-1001", True),
        ("order W-2002", "#W2002", True),
        ("order w2002", "#W2002", True),
        ("order O-1001", "O1001", True),
        ("order P1001", "O-1001", False),
        ("order XO1001", "O-1001", False),
        ("order O-10012", "O-1001", False),
        ("refund $1,234.50?", "1234.5", True),
        ("refund 1234.50?", "1234.5", True),
        ("refund 1.234,50 EUR?", "1234.5", True),
        ("refund $1,234.55?", "1234.5", False),
        ("refund 12,345?", "1234.5", False),
        ("refund 22,50 €?", "22.5", True),
        ("refund 22.05?", "22.5", False),
    ],
)
def test_a_value_is_named_in_its_spellings_and_only_those(
    text: str, value: str, same: bool
) -> None:
    assert mentions(normalise(text), value) is same


@pytest.mark.parametrize(
    ("question", "passes"),
    [
        ("Shall I refund $1,234.50 to your Visa?", True),
        ("Shall I refund USD 1234.50 to your Visa?", True),
        ("Shall I refund $1,234.05 to your Visa?", False),
        ("Shall I refund $1,243.50 to your Visa?", False),
    ],
)
def test_an_amount_a_tool_took_as_a_number_is_confirmed_in_money_notation(
    question: str, passes: bool
) -> None:
    rule = constraint(
        id="c",
        confirmed={"change": {"tool": "refund"}, "names": ["args.amount"], "asks": r"\brefund"},
    )
    trace = Trace("I want a refund").agent(question).user("Yes")
    trace.call("refund", {"amount": 1234.5}, {"ok": True})
    assert trace.check(rule).passed is passes


# --- 3. τ²: nothing after the user was told of the transfer ---------------------------------

ORDER = "#W0000001"
TOLD = [
    "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.",
    "You are being transferred to a human agent. Please hold on.",
    "I've transferred you to a human representative.",
    "I'm transferring you to a live agent now.",
    "You'll be connected to a human agent shortly.",
]


@pytest.mark.parametrize("told", TOLD)
def test_a_write_after_the_user_was_told_of_the_transfer_fails(told: str) -> None:
    """The agent told the user of the hand-over (without the transfer call, or before it) and
    then returned the order: no transfer call came before the write, so it passed."""
    trace = Trace("I want a human").agent(told)
    trace.call("return_delivered_order_items", {"order_id": ORDER}, {"order_id": ORDER})
    passed, evidence = tau2_checks.transferred_last(trace.events, None)
    assert not passed and evidence["offending_step"] == 2, evidence
    trace = Trace("I want a human").agent(told)
    trace.call("transfer_to_human_agents", {"summary": "x"}, "Transfer successful")
    trace.call("get_order_details", {"order_id": ORDER}, {"order_id": ORDER})
    assert not tau2_checks.transferred_last(trace.events, None)[0]


@pytest.mark.parametrize(
    "said",
    [
        "I can transfer you to a human agent if you like.",
        "Would you like me to transfer you to a human agent?",
        "You are not being transferred to a human agent; I can do this myself.",
    ],
)
def test_an_offer_of_a_transfer_is_no_transfer(said: str) -> None:
    trace = Trace("I want a refund").agent(said).user("No, you do it.")
    trace.call("return_delivered_order_items", {"order_id": ORDER}, {"order_id": ORDER})
    assert tau2_checks.transferred_last(trace.events, None)[0]


def test_the_transfer_call_may_follow_its_message() -> None:
    """Telling the user first and then calling the transfer tool is the hand-over itself."""
    trace = Trace("I want a human").agent(TOLD[0])
    trace.call("transfer_to_human_agents", {"summary": "x"}, "Transfer successful")
    assert tau2_checks.transferred_last(trace.events, None)[0]


# --- 4. a decision put off, then made -------------------------------------------------------

PUT_OFF = [
    "Let me think.",
    "Let me think about it.",
    "Hmm, let me think it over.",
    "I need to think about it.",
    "Not yet, let me think.",
    "Let me think for a moment.",
    "Give me a minute to think.",
]


def _cased(text: str) -> list[str]:
    return [text, text.lower(), text.upper()]


@pytest.mark.parametrize("first", [cased for said in PUT_OFF for cased in _cased(said)])
@pytest.mark.parametrize("then", ["OK, go ahead.", "Yes, please go ahead."])
def test_a_decision_put_off_then_made_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], first: str, then: str
) -> None:
    """ "Let me think." "OK, go ahead.": the first read as a no, and no later message made it
    a yes, so the correct refund failed."""
    o = oracles["refund-socks"]
    trace = _asked(o, QUESTION.format(amount="$22.00"), first, ("user", then))
    assert failing(retail, "refund-socks", trace) == []


@pytest.mark.parametrize(
    "messages",
    [
        ["Let me think."],
        ["Let me think.", "Thanks."],
        ["Let me think.", "Actually no."],
        ["Let me think.", "Let me think."],
        ["Let me think.", "To my gift card please."],
        ["Yes, but let me think."],
        ["Let me think, maybe PayPal instead."],
        ["Let me check with my wife first.", "OK, go ahead."],
        ["Yes.", "Let me think."],
        ["Let me think.", "OK, go ahead.", "Wait, stop."],
        ["Let me think.", "Yes, but only $11."],
    ],
)
def test_a_decision_put_off_and_not_made_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], messages: list[str]
) -> None:
    o = oracles["refund-socks"]
    first, *then = messages
    trace = _asked(o, QUESTION.format(amount="$22.00"), first, *(("user", t) for t in then))
    assert "p2-confirmed-refund" in failing(retail, "refund-socks", trace)


def test_a_decision_put_off_answered_after_the_agent_spoke_is_not_joined(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """Only messages with no agent message between are one reply: "Let me think." "Sure,
    take your time." "OK, go ahead." answers the agent's last message, which names nothing."""
    said: list[Any] = [("agent", "Sure, take your time."), ("user", "OK, go ahead.")]
    trace = _asked(
        oracles["refund-socks"], QUESTION.format(amount="$22.00"), "Let me think.", *said
    )
    assert "p2-confirmed-refund" in failing(retail, "refund-socks", trace)
