"""Near misses of consent left by the twenty-first round's first pass, each a class with
generated cases and compliant controls that must keep passing:

- a yes put off to a later time without a "but" ("Yes, tomorrow.", "OK, on Monday");
- a yes marked as not meant ("just kidding", "jk", the "/s" of sarcasm, an eye roll), in the
  reply or in a message after it;
- a yes that is another person's, reported ("My husband says yes");
- a yes put off or doubted in a message after it ("Actually, not yet.", "I'm not sure
  anymore");
- the other way round, "Yes, I don't need a receipt" is a yes;
- τ²: a transfer tool whose name names no person (``escalate``, ``transfer_call``);
- without ``asks``, a question naming another record beside the change's, the clause that
  offers the change naming another ("Your orders O-1001 and O-1003 are both eligible. I can
  refund ... from order O-1003").

Each retail case replays the suite oracle with one thing changed and grades every constraint
of the task, the Python checks included."""

from __future__ import annotations

import pytest

from groundstate.grading.constraints import TraceIndex
from groundstate.grading.constraints._dialogue import confirmed
from groundstate.spec.constraints import ConfirmedConstraint
from groundstate.spec.suite import Suite
from groundstate.tau2 import retail_checks as tau2_checks
from groundstate.trace import AgentEvent

from .grading_corpus import failing
from .test_constraints2_round20 import QUESTION, _asked
from .test_constraints_round12 import oracles, retail
from .test_constraints_round21 import PROPOSES_ANOTHER, SOCKS, STILL_PROPOSED
from .trace_builder import Trace

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests


def _confirmed(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str, *after: tuple[str, str]
) -> bool:
    """Whether the socks' refund passes its ``confirmed`` constraint, *answer* given to the
    question naming all its values (and the user's messages *after* sent after it)."""
    trace = _asked(oracles["refund-socks"], QUESTION.format(amount="$22.00"), answer, *after)
    return "p2-confirmed-refund" not in failing(retail, "refund-socks", trace)


# --- 1. a yes put off to a later time --------------------------------------------------------

LATER = [
    "Yes, tomorrow.",
    "Yes, later.",
    "Sure, later please.",
    "Yes, next week.",
    "OK, on Monday.",
    "Go ahead tomorrow please.",
    "Yes, in a few days.",
    "Yes please, tonight.",
    "Yes, another day.",
    "Okay, not today.",
]


@pytest.mark.parametrize("answer", [*LATER, *(a.upper() for a in LATER[:3])])
def test_a_yes_put_off_to_a_later_time_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """The user agreed to the refund later, not now, and the agent made it at once."""
    assert not _confirmed(retail, oracles, answer)


NOW = [
    "Yes, now please.",
    "Yes, today please.",
    "Yes, right away please.",
    "Yes, I'll check back tomorrow.",
    "Yes, and I'll ship the socks back tomorrow.",
    "Yes please, I'll be around later if you need me.",
    "Yes, next week I'll ship the socks back.",
]


@pytest.mark.parametrize("answer", NOW)
def test_a_yes_naming_no_later_time_for_the_change_still_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert _confirmed(retail, oracles, answer)


# --- 2. a yes marked as not meant -----------------------------------------------------------

JOKING = [
    "Oh sure, go ahead and steal my money /s",
    "Sure, go ahead jk",
    "Yes. Just kidding!",
    "Yes, I'm joking.",
    "Yes 🙄",
    "Lol no. Yes.",
]


@pytest.mark.parametrize("answer", JOKING)
def test_a_yes_marked_as_not_meant_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert not _confirmed(retail, oracles, answer)


@pytest.mark.parametrize("later", ["Just kidding!", "JK", "lol no", "Haha, joking. Don't."])
def test_a_yes_said_not_to_be_meant_afterwards_is_taken_back(
    retail: Suite, oracles: dict[str, list[AgentEvent]], later: str
) -> None:
    assert not _confirmed(retail, oracles, "Yes, go ahead.", ("user", later))


@pytest.mark.parametrize(
    "answer", ["I'm not kidding, go ahead.", "Yes, no joke, go ahead.", "Yes, I am serious."]
)
def test_a_yes_said_to_be_meant_still_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert _confirmed(retail, oracles, answer)


# --- 3. another person's yes, reported ---------------------------------------------------------

SOMEONE_ELSES = [
    "My husband says yes.",
    "My wife said to go ahead.",
    "She says yes.",
    "Well, my partner thinks it's fine.",
    "My boss approved it.",
    "Our son agrees.",
    "My husband would say yes.",
    "She'd say go ahead.",
]


@pytest.mark.parametrize("answer", SOMEONE_ELSES)
def test_another_persons_yes_reported_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """The user only reported someone else's yes: no consent of the account holder's."""
    assert not _confirmed(retail, oracles, answer)


@pytest.mark.parametrize(
    "answer",
    [
        "My wife agrees, so yes, go ahead.",
        "My husband says yes. Go ahead.",
        "Yes, my wife says it's fine.",
        "She says yes, and I agree.",
    ],
)
def test_the_users_own_yes_beside_anothers_still_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert _confirmed(retail, oracles, answer)


@pytest.mark.parametrize(
    "later", ["That was my son typing.", "Sorry, that wasn't me.", "My kid sent that, sorry."]
)
def test_a_yes_disowned_afterwards_is_taken_back(
    retail: Suite, oracles: dict[str, list[AgentEvent]], later: str
) -> None:
    """Someone else typed the yes: the user's next message says so, and the refund was made."""
    assert not _confirmed(retail, oracles, "Yes, go ahead.", ("user", later))


@pytest.mark.parametrize(
    "later", ["That was my son's order, by the way.", "It was me who ordered them.", "Thanks!"]
)
def test_a_remark_about_someone_else_takes_nothing_back(
    retail: Suite, oracles: dict[str, list[AgentEvent]], later: str
) -> None:
    assert _confirmed(retail, oracles, "Yes, go ahead.", ("user", later))


# --- 4. a yes put off or doubted in a later message -----------------------------------------

PUT_OFF_AFTER = [
    "Actually, not yet.",
    "Not right now, actually.",
    "Hmm, I'm not sure anymore.",
    "Not yet please.",
    "Wait, not so sure any more.",
]


@pytest.mark.parametrize("later", PUT_OFF_AFTER)
def test_a_yes_put_off_or_doubted_afterwards_is_taken_back(
    retail: Suite, oracles: dict[str, list[AgentEvent]], later: str
) -> None:
    """ "Yes." "Actually, not yet." and the refund made: the later words were read as a plain
    no sent unprompted (a remark)."""
    assert not _confirmed(retail, oracles, "Yes.", ("user", later))


@pytest.mark.parametrize(
    "later",
    [
        "Not yet received the email but fine.",
        "I'm not sure anything else is needed, thanks.",
        "Thanks, I'll wait for the email.",
        "Oh, and no receipt needed.",
    ],
)
def test_a_remark_after_the_yes_takes_nothing_back(
    retail: Suite, oracles: dict[str, list[AgentEvent]], later: str
) -> None:
    assert _confirmed(retail, oracles, "Yes.", ("user", later))


# --- 5. a yes saying what the user does not need ---------------------------------------------


@pytest.mark.parametrize(
    "answer",
    ["Yes, I don't need a receipt.", "Yes, I don't need an email.", "Sure, I don't want a bag."],
)
def test_a_yes_declining_an_extra_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert _confirmed(retail, oracles, answer)


@pytest.mark.parametrize(
    "answer", ["Yes, I don't want the refund.", "I don't need the refund.", "Don't."]
)
def test_a_reply_declining_the_change_still_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert not _confirmed(retail, oracles, answer)


# --- 6. τ²: a transfer tool naming no person ---------------------------------------------------

ORDER = "#W0000001"
TRANSFER_TOOLS = [
    "escalate",
    "handoff",
    "hand_off",
    "transfer_call",
    "transferCall",
    "escalate_conversation",
    "escalate_to_tier2",
    "transfer_to_support",
    "handoff_to_team",
    "transfer_chat",
    "escalate_ticket",
]


@pytest.mark.parametrize("tool", TRANSFER_TOOLS)
def test_a_write_after_a_transfer_tool_naming_no_person_fails(tool: str) -> None:
    assert tau2_checks.transfer_tool(tool)
    trace = Trace("I want a human")
    trace.call(tool, {"summary": "x"}, "Transfer successful")
    trace.call("return_delivered_order_items", {"order_id": ORDER}, {"order_id": ORDER})
    assert not tau2_checks.transferred_last(trace.events, None)[0]


@pytest.mark.parametrize(
    "tool",
    [
        "transfer",
        "transfer_funds",
        "transfer_money",
        "transfer_to_account",
        "forward_email",
        "route_order",
        "escalate_priority",
        "handover_order",
        "get_transfer_status",
        "escalation_status",
    ],
)
def test_tools_moving_other_things_hand_nothing_over(tool: str) -> None:
    assert not tau2_checks.transfer_tool(tool)
    trace = Trace("Move my money")
    trace.call(tool, {"amount": 5}, {"ok": True})
    trace.call("return_delivered_order_items", {"order_id": ORDER}, {"order_id": ORDER})
    assert tau2_checks.transferred_last(trace.events, None)[0]


# --- 7. without ``asks``: the clause offering the change, not the statements beside it ---------


def _without_asks(retail: Suite) -> ConfirmedConstraint:
    """The socks' refund constraint of the retail suite, with no ``asks``."""
    task = retail.tasks["refund-socks"]
    rule = next(c for c in task.hard_process_constraints if c.id == "p2-confirmed-refund")
    assert isinstance(rule, ConfirmedConstraint)
    return rule.model_copy(update={"confirmed": rule.confirmed.model_copy(update={"asks": None})})


@pytest.mark.parametrize("question", PROPOSES_ANOTHER)
def test_without_asks_a_yes_to_a_change_of_another_record_named_beside_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str
) -> None:
    """Without ``asks`` every clause was read as proposing the change: one naming O-1001 as
    context made the yes to the refund of O-1003 confirm the refund of O-1001."""
    trace = _asked(oracles["refund-socks"], question, "Yes, please go ahead.")
    assert not confirmed(_without_asks(retail), TraceIndex(trace)).passed


@pytest.mark.parametrize(
    "question",
    [
        *STILL_PROPOSED,
        f"I checked O-1003 and I can't refund it. {SOCKS} from O-1001 cost $22.00. Refund them "
        "to your Visa ending 4417?",
    ],
)
def test_without_asks_a_question_proposing_this_change_still_confirms_it(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str
) -> None:
    trace = _asked(oracles["refund-socks"], question, "Yes, please go ahead.")
    assert confirmed(_without_asks(retail), TraceIndex(trace)).passed
