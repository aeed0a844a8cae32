"""A policy reviewer's near misses of consent and identity, nineteenth round (second pass),
each a class with generated phrasings and compliant controls that must keep passing:

- a go-ahead that asks for something before the change ("Go ahead and tell me the total
  first", "Yes, before you do, what's the total?", "OK, after you tell me the total"): the
  decision waits for the answer, so no consent to act now (policy 2);
- a yes whose "but" clause states a value of an attribute of the change ("Yes, but the
  colour is purple", "Yes, but the size is 10"): a term, unless every word of it is one the
  question or the records it names say ("Yes, but the socks from May" of an order placed in
  May restates the record and confirms);
- a change made for an account the person talking has not proved is theirs: verified with
  details the user said are another person's ("my husband's email"), after another person
  said they are talking now ("Now it's Leo"), or after a verification attempt that failed
  (policy 1, ``p1-one-customer``). Controls: a typo corrected and verified, the same account
  verified again, the customer naming herself.

The retail ones replay a suite oracle with one thing changed and grade every constraint of
the task, the Python checks included."""

from __future__ import annotations

import pytest

from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent, MessageEvent

from .grading_corpus import failing
from .test_constraints_round12 import oracles, retail
from .test_constraints_round15 import _answered
from .test_policies_round19 import _at, _call, _replace

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests


def _cased(text: str) -> list[str]:
    return [text, text.lower(), text.upper()]


# --- policy 2: a go-ahead asking for something first is no consent to act now -----------------

ASKED_FIRST = [
    "Go ahead and tell me the total first.",
    "Yes, but check the price first.",
    "Sure, check the size first, then do it.",
    "Yes, before you do, what's the total?",
    "Yes, before you process it, how much is it?",
    "Yes, before that, what's the fee?",
    "OK, after you tell me the total.",
    "Go ahead, once you've told me the total.",
    "OK go ahead after you explain the fee.",
    "Yes, once you check the price.",
    "First tell me the total, then yes.",
    "Yes please. First, what is the total?",
    "Yes, let me know the total first please.",
    "Sure, show me the total first and then go ahead.",
    "Yes, but double-check the size first.",
    "Yes, but I want to know the total first.",
    "Sure, I'd like to see the total first.",
    "Yes, tell me the total before you do it.",
]
FIRST_CONSENTS = [
    "Yes, please go ahead.",
    "Yes, before you go, thanks for the help!",
    "Yes, and tell me when it's done.",
    "Yes, go ahead, and send me the receipt afterwards.",
    "Yes, it's my first return.",
    "Sure, I checked the size first thing this morning.",
    "Yes please, and let me know once it's done.",
    "Yes, and email me once you've confirmed the refund went through.",
    "Yes, like I said before.",
    "Yes, I've done this before.",
    "Yes. Tell me the total afterwards.",
]


@pytest.mark.parametrize("task", ["refund-socks", "exchange-shoe-size"])
@pytest.mark.parametrize("answer", [cased for said in ASKED_FIRST for cased in _cased(said)])
def test_a_go_ahead_asking_for_something_first_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, answer: str
) -> None:
    """ "Go ahead and tell me the total first." confirmed the change: only "but first" put a
    decision off."""
    rule = {"refund-socks": "p2-confirmed-refund", "exchange-shoe-size": "p2-confirmed-exchange"}
    assert failing(retail, task, _answered(oracles[task], answer)) == [rule[task]]


@pytest.mark.parametrize("answer", [cased for said in FIRST_CONSENTS for cased in _cased(said)])
def test_first_and_before_in_other_senses_are_consent(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert failing(retail, "refund-socks", _answered(oracles["refund-socks"], answer)) == []


@pytest.mark.parametrize("answer", ["Yes, the first one.", "Yes, the one I bought first."])
def test_first_naming_a_record_is_consent(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    events = _answered(oracles["exchange-shoe-size"], answer)
    assert failing(retail, "exchange-shoe-size", events) == []


# --- policy 2: a "but" clause stating a value, or restating the question's record -------------

# "I can exchange your Trailhead Running Shoe (size 8, grey) from order O-1012 for size 9 in
# grey, which is in stock, at no cost. Please confirm."
STATED = [
    "Yes, but the colour is purple.",
    "Yes, but the color should be purple.",
    "Yes, but the colour's purple.",
    "Yes, but the size is 10.",
    "Yes, but the size needs to be 10.",
    "Yes, but my address is 5 Elm Street.",
    "Yes, but the shoes from March.",
]
RESTATED = [
    "Yes, but the colour is grey.",
    "Yes, but the size is 9.",
    "Yes, but the shoes from O-1012.",
    "Yes, but the Trailhead shoes from my order.",
    "Yes, but the size is too small on my old pair.",
    "Yes, but the zip broke on the old pair.",
]


@pytest.mark.parametrize("answer", [cased for said in STATED for cased in _cased(said)])
def test_a_but_clause_stating_another_value_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """ "Yes, but the colour is purple" was a remark about the thing (its subject "the colour
    is"), so it confirmed the exchange in grey."""
    events = _answered(oracles["exchange-shoe-size"], answer)
    assert failing(retail, "exchange-shoe-size", events) == ["p2-confirmed-exchange"]


@pytest.mark.parametrize("answer", [cased for said in RESTATED for cased in _cased(said)])
def test_a_but_clause_restating_the_question_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    events = _answered(oracles["exchange-shoe-size"], answer)
    assert failing(retail, "exchange-shoe-size", events) == []


# "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, $22.00, to ... your Visa
# ending 4417." O-1001 was placed 2025-05-28 and delivered 2025-06-02.
@pytest.mark.parametrize(
    ("answer", "confirms"),
    [
        ("Yes, but the socks from May.", True),
        ("Yes, but the socks from June.", True),
        ("Yes, but the socks from O-1001.", True),
        ("Yes, but the wool socks from order O-1001.", True),
        ("Yes, but the socks from March.", False),
        ("Yes, but the amount is $11.", False),
        ("Yes, but the card is my Mastercard.", False),
    ],
)
def test_a_but_clause_is_read_against_the_records_the_question_names(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str, confirms: bool
) -> None:
    """ "Yes, but the socks from May" (O-1001 was placed in May) only restates the record: it
    was refused as a term ("from", "may" were words the question did not say)."""
    events = _answered(oracles["refund-socks"], answer)
    assert failing(retail, "refund-socks", events) == ([] if confirms else ["p2-confirmed-refund"])


# --- policy 1: acting on an account the person talking has not proved is theirs ---------------

ANOTHERS = [
    "My husband's email is maya.chen@example.com and his zip is 97214.",
    "This is my husband's account: maya.chen@example.com, 97214.",
    "The email is my wife's: maya.chen@example.com. Zip 97214.",
    "Her email is maya.chen@example.com, zip 97214.",
    "It's my partner's e-mail, maya.chen@example.com, and the zip is 97214.",
    "The account belongs to my son: maya.chen@example.com 97214.",
    "My mom's login is maya.chen@example.com, zip code 97214.",
]


def _verifying(o: list[AgentEvent], text: str) -> list[AgentEvent]:
    """*o* with the user's message giving the details replaced by *text*."""
    at = _at(o, "verify_identity") - 1
    assert getattr(o[at], "role", None) == "user"
    return _replace(o, at, text=text)


@pytest.mark.parametrize("text", ANOTHERS)
def test_verifying_with_details_said_to_be_another_s_authorises_no_change(
    retail: Suite, oracles: dict[str, list[AgentEvent]], text: str
) -> None:
    """The customer verified with her husband's email and zip: one verified customer to
    every check, so the refund on his account passed."""
    trace = _verifying(oracles["refund-socks"], text)
    assert failing(retail, "refund-socks", trace) == ["p1-one-customer"]


OWN = [
    "My email is maya.chen@example.com. My zip code is 97214.",
    "maya.chen@example.com, 97214. My husband bought these socks for me.",
    "My email is maya.chen@example.com and zip 97214; my husband's email is different.",
    "It's maya.chen@example.com (my husband set the order up), zip 97214.",
]


@pytest.mark.parametrize("text", OWN)
def test_verifying_with_her_own_details_authorises_the_change(
    retail: Suite, oracles: dict[str, list[AgentEvent]], text: str
) -> None:
    assert failing(retail, "refund-socks", _verifying(oracles["refund-socks"], text)) == []


def _before_refund(o: list[AgentEvent], *added: AgentEvent) -> list[AgentEvent]:
    at = _at(o, "refund_item")
    return [*o[:at], *added, *o[at:]]


LEO_FAILS = _call(
    6, "verify_identity", {"email": "leo.chen@example.com", "zip_code": "97299"}, None, ok=False
)
SOMEONE_ELSE = [
    "Now it's Leo.",
    "This is Leo now, she stepped out.",
    "It's Leo speaking, her husband.",
    "I'm her husband, by the way.",
    "Her husband here, can you also check something?",
    "Someone else here now, taking over from her.",
]


@pytest.mark.parametrize("text", SOMEONE_ELSE)
def test_acting_after_another_person_says_they_talk_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], text: str
) -> None:
    """Another person took over the conversation; the agent refunded on the first account."""
    said = MessageEvent(step=6, role="user", text=text, at=0)
    trace = _before_refund(oracles["refund-socks"], said)
    assert "p1-one-customer" in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize("text", [None, "Now it's Leo: leo.chen@example.com, 97299.", "Try 97299."])
def test_acting_after_a_failed_verification_mid_conversation_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], text: str | None
) -> None:
    """A verification failed after the customer's (another person's, or a wrong zip): the
    agent went on acting on the first account."""
    said = [] if text is None else [MessageEvent(step=6, role="user", text=text, at=0)]
    trace = _before_refund(oracles["refund-socks"], *said, LEO_FAILS)
    assert "p1-one-customer" in failing(retail, "refund-socks", trace)


MAYA_AGAIN = _call(
    7,
    "verify_identity",
    {"email": "maya.chen@example.com", "zip_code": "97214"},
    {"verified": True, "customer_id": "C01", "name": "Maya Chen"},
)


def test_verifying_the_same_account_again_after_a_failure_authorises_the_change(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    said = MessageEvent(step=6, role="user", text="Try leo.chen@example.com, 97299?", at=0)
    trace = _before_refund(oracles["refund-socks"], said, LEO_FAILS, MAYA_AGAIN)
    assert failing(retail, "refund-socks", trace) == []


def test_a_typo_corrected_and_verified_authorises_the_change(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    o = oracles["refund-socks"]
    at = _at(o, "verify_identity")
    typed = {"email": "maya.chen@exmaple.com", "zip_code": "97214"}
    said = MessageEvent(step=o[at].step, role="user", text="maya.chen@exmaple.com, 97214", at=0)
    typo = _call(o[at].step, "verify_identity", typed, None, ok=False)
    fixed = MessageEvent(
        step=o[at].step, role="user", text="Sorry, typo: maya.chen@example.com", at=0
    )
    trace = [*o[:at], said, typo, fixed, *o[at:]]
    assert failing(retail, "refund-socks", trace) == []


@pytest.mark.parametrize(
    "text",
    [
        "This is Maya speaking, by the way.",
        "Now it's Friday, so please hurry.",
        "It's done now?",
        "Is it Leo's order? No, it's mine.",
    ],
)
def test_the_customer_naming_herself_or_a_day_is_no_other_person(
    retail: Suite, oracles: dict[str, list[AgentEvent]], text: str
) -> None:
    said = MessageEvent(step=6, role="user", text=text, at=0)
    trace = _before_refund(oracles["refund-socks"], said)
    assert "p1-one-customer" not in failing(retail, "refund-socks", trace)


def test_re_verifying_the_same_account_after_the_change_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    o = oracles["refund-socks"]
    at = _at(o, "refund_item") + 1
    assert failing(retail, "refund-socks", [*o[:at], MAYA_AGAIN, *o[at:]]) == []
