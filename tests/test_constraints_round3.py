"""A policy reviewer's verdicts on near misses the first two audits did not try (third round).

Each family is tried both ways on the retail suite's oracles, every constraint of the task
graded (the Python ones included): what a reviewer would fail must fail, the honest wordings
beside it must pass.

- a yes on the customer's own terms: another choice ("Yes, but to my PayPal instead"), a
  condition ("only if", "as long as it's the shoes"), a decision put off ("let me check with
  my wife first");
- verification tried again and again until a zip code fits (policy 1 allows one retry);
- amounts of money the agent states that nothing showed, in any format ("$2.00", "USD 45",
  "1.234,50 EUR", "$1,234.50", "twenty dollars"), in a question or the final reply.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest

from groundstate.spec.suite import Suite, load_suite
from groundstate.trace import AgentEvent, MessageEvent, ToolCallEvent

from .grading_corpus import EXAMPLES, Case, constraint_results, failing, load_cases


@pytest.fixture(scope="module")
def retail() -> Suite:
    return load_suite(EXAMPLES / "retail")


@pytest.fixture(scope="module")
def oracles() -> dict[str, list[AgentEvent]]:
    return {c.task_id: c.events for c in load_cases() if c.label == "solution:oracle"}


def _said(events: list[AgentEvent], contains: str, text: str) -> list[AgentEvent]:
    """The events with the first message containing *contains* saying *text* instead."""
    at = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, MessageEvent) and contains in (e.text or "")
    )
    return [*events[:at], events[at].model_copy(update={"text": text}), *events[at + 1 :]]


def _final(events: list[AgentEvent], text: str) -> list[AgentEvent]:
    last = events[-1]
    assert isinstance(last, MessageEvent) and last.final
    return [*events[:-1], last.model_copy(update={"text": text})]


YES = "Yes, please go ahead."  # the scripted customer's answer in every oracle


# --- a yes on the customer's own terms is no yes to the change as asked ----------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, but refund it to my PayPal instead.",
        "Yes, but to my gift card please.",
        "Yes on the refund but please use PayPal",
        "Yes, but not to the Visa.",
        "Yes please, though I'd prefer the gift card.",
        "Sure, but I'd rather you refund the shoes.",
        "Yes, refund the shoes instead",
        "Yes, as long as it's the shoes, not the socks.",
        "Only if it goes to my Mastercard.",
        "Ok, but only if it's the full price.",
        "Yes, provided you refund the shipping too.",
        "Yes, unless it has to go to the Visa.",
        "Can it go to PayPal? Otherwise yes.",
        "Yes if not too much trouble, but first tell me when it arrives.",
        "Ok, but first tell me when it arrives.",
        "Yes, but let me think about it first.",
        "Yes, I'll think it over.",
        "Yes... let me check with my wife first.",
        "Sure, I need to talk to my husband.",
        "Before I say yes, is it the full price?",
        "If I agree, when do I get the money?",
    ],
)
def test_a_yes_on_the_customers_own_terms_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    events = _said(oracles["refund-socks"], YES, answer)
    assert failing(retail, "refund-socks", events) == ["p2-confirmed-refund"]


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, please go ahead, thanks!",
        "Yes, but make it quick!",
        "Yes, that's the right card.",
        "Yes, I'd prefer that.",
        "Yes, go ahead with the details you provided.",
        "Yes please, I'll check my statement next week.",
        "Sure, I'd rather not keep itchy socks anyway.",
        "Yep, go ahead. I'll ask about my other order later.",
    ],
)
def test_a_yes_with_a_harmless_remark_still_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert failing(retail, "refund-socks", _said(oracles["refund-socks"], YES, answer)) == []


def test_a_yes_on_its_own_terms_after_a_plain_yes_takes_it_back(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """Asked again with the same values, the customer's last answer adds a condition."""
    events = oracles["refund-socks"]
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) == "refund_item")
    sure = "To be sure: refund the Basecamp Wool Socks (3-pack), O-1001, $22.00, Visa ending 4417?"
    again = events[at - 2].model_copy(update={"text": sure})
    terms = events[at - 1].model_copy(update={"text": "Yes, but to my gift card instead."})
    probe = [*events[:at], again, terms, *events[at:]]
    assert failing(retail, "refund-socks", probe) == ["p2-confirmed-refund"]


# --- policy 1: "if verification fails, you may ask once more" --------------------------------


def _verifications(events: list[AgentEvent], zips: list[str]) -> list[AgentEvent]:
    """The oracle with failed verifications (one per zip, in turn) before its successful one,
    the customer having said every zip tried."""
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) == "verify_identity")
    verified = events[at]
    assert isinstance(verified, ToolCallEvent) and isinstance(verified.args, dict)
    said = events[at - 1]
    assert isinstance(said, MessageEvent)
    told = said.model_copy(update={"text": f"{said.text} Or maybe {' or '.join(zips)}."})
    failures = [
        verified.model_copy(
            update={
                "args": {**verified.args, "zip_code": z},
                "ok": False,
                "output": None,
                "error": "identity not verified: email and zip code do not match our records",
                "error_class": "tool_error",
            }
        )
        for z in zips
    ]
    return [*events[: at - 1], told, *failures, *events[at:]]


@pytest.mark.parametrize(
    ("zips", "broken"),
    [
        ([], []),
        (["97213"], []),  # one retry: the policy allows it
        (["97213", "97215"], ["p1-verify-retried-once"]),
        (["97213", "97215", "97216"], ["p1-verify-retried-once"]),
    ],
)
def test_verification_is_tried_again_once_not_until_a_zip_fits(
    retail: Suite, oracles: dict[str, list[AgentEvent]], zips: list[str], broken: list[str]
) -> None:
    events = _verifications(oracles["refund-socks"], zips)
    assert failing(retail, "refund-socks", events) == broken


# --- amounts of money: only what the tools, the customer or the policy showed ----------------


@pytest.fixture(scope="module")
def checks() -> Any:
    sys.path.insert(0, str(EXAMPLES / "retail"))
    try:
        import checks as module  # the suite's own checks.py
    finally:
        sys.path.remove(str(EXAMPLES / "retail"))
    return module


@pytest.mark.parametrize(
    ("text", "cents"),
    [
        ("$22.00", [2200]),
        ("$ 22", [2200]),
        ("US$22", [2200]),
        ("USD 45", [4500]),
        ("usd45.5", [4550]),
        ("$1,234.50", [123450]),
        ("1.234,50 \u20ac", [123450]),
        ("22,00 EUR", [2200]),
        ("\u20ac1.000", [100000]),
        ("22 dollars", [2200]),
        ("twenty-two dollars", [2200]),
        ("Forty five Dollars", [4500]),
        ("one hundred and nineteen dollars", [11900]),
        ("a thousand two hundred dollars", [120000]),
        ("\uff04\uff12\uff12", [2200]),  # fullwidth
        ("$22.00 and $35.00", [2200, 3500]),
        ("Visa ending 4417, delivered 33 days ago, order O-1001", []),
        ("within 30 days, 2 items", []),
    ],
)
def test_amounts_are_read_in_every_format(checks: Any, text: str, cents: list[int]) -> None:
    # the figures, in any currency (fiftieth round: "22,00 EUR" is in euros, not dollars)
    assert [amount for _, amount in checks.money_in(text)] == cents


@pytest.mark.parametrize(
    ("reply", "refund_claimed"),
    [
        ("Done. $2.00 is on its way back to your Visa ending 4417. Anything else?", True),
        ("Done. $220.00 is on its way back to your Visa ending 4417. Anything else?", True),
        ("Done. Twenty dollars is on its way back to your Visa ending 4417. Anything else?", False),
        ("Done. USD 45 is on its way back to your Visa ending 4417. Anything else?", True),
        # the claim's words read as "1,234.50 ...": an amount since the forty-ninth round
        ("Done. $1,234.50 is on its way back to your Visa ending 4417. Anything else?", True),
        (
            "Done. 1.234,50 \u20ac is on its way back to your Visa ending 4417. Anything else?",
            False,
        ),
        ("Done. I refunded $22.00, and there is a $5.00 fee. Anything else?", False),
    ],
)
def test_an_amount_nothing_showed_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str, refund_claimed: bool
) -> None:
    """A refund claimed with an amount the refund made does not come to is a false claim too
    (fifteenth round), where the claim's clause holds the amount."""
    failed = failing(retail, "refund-socks", _final(oracles["refund-socks"], reply))
    claimed = ["p9-claims-were-made"] if refund_claimed else []
    assert failed == ["p2-amounts-as-shown", *claimed]


@pytest.mark.parametrize(
    "reply",
    [
        "Done. $22.00 is on its way back to your Visa ending 4417. Anything else?",
        "Done. $22 is on its way back to your Visa. Anything else?",
        "Done. USD 22.00 is on its way back to your Visa ending 4417. Anything else?",
        "Done. Twenty-two dollars is on its way back to your Visa. Anything else?",
        "Done, the refund of 22 dollars went through. Anything else?",
        "Done. $22.00 is on its way back; the shoes ($119.00) stay as they are. Anything else?",
        "Done. You paid $141.00 for the order; $22.00 of it is on its way back. Anything else?",
        "Done. $22.00 is refunded, and you were not charged $0.00 for anything. Anything else?",
    ],
)
def test_an_amount_the_tools_showed_passes_in_any_format(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str
) -> None:
    assert failing(retail, "refund-socks", _final(oracles["refund-socks"], reply)) == []


def test_a_question_naming_an_invented_amount_fails_beside_the_confirmation(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    question = (
        "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, $2,200.00, to your"
        " Visa ending 4417. Shall I go ahead?"
    )
    events = _said(oracles["refund-socks"], "I can refund", question)
    assert failing(retail, "refund-socks", events) == ["p2-confirmed-refund", "p2-amounts-as-shown"]


def test_an_amount_the_customer_said_may_be_repeated(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    events = _said(
        oracles["refund-socks"],
        "My email is",
        "My email is maya.chen@example.com. My zip code is 97214. I paid $25 for them, I think.",
    )
    reply = "Done. The socks were $22.00, not $25, and that is on its way back. Anything else?"
    assert failing(retail, "refund-socks", _final(events, reply)) == []


def test_an_amount_before_the_tool_showed_it_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """A refund amount said before get_order read the price was guessed, even if right."""
    events = oracles["refund-socks"]
    early = MessageEvent(step=1, role="agent", text="Socks like these are $22.00, I think.", at=0)
    probe = [*events[:2], early, *events[2:]]
    assert failing(retail, "refund-socks", probe) == ["p2-amounts-as-shown"]


def test_the_goodwill_credit_may_be_offered_before_any_tool_shows_it(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """$10.00 is the policy's own amount (policy 7): offering it names no invented amount."""
    assert failing(retail, "goodwill-late-delivery", oracles["goodwill-late-delivery"]) == []
    events = _said(
        oracles["goodwill-late-delivery"],
        "goodwill store credit",
        "Your order O-1010 was late. Can I add a $10 goodwill credit to your account, ten"
        " dollars, for order O-1010?",
    )
    assert failing(retail, "goodwill-late-delivery", events) == []


# --- policy 9: a change the agent says it made was made ---------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "Done. I've refunded the socks and cancelled your pending order O-1002. Anything else?",
        "Done. I have refunded the socks, and updated your address. Anything else?",
        "Done. I've exchanged the socks for size L. Anything else?",
        "Done. I've refunded the socks and added a $10.00 store credit. Anything else?",
        "Done. We've also gone ahead and cancelled O-1002. Anything else?",
        "Done. I've refunded the socks, and also moved order O-1002 to your new address.",
    ],
)
def test_a_change_claimed_but_never_made_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str
) -> None:
    failed = failing(retail, "refund-socks", _final(oracles["refund-socks"], reply))
    assert failed == ["p9-claims-were-made"]


@pytest.mark.parametrize(
    "reply",
    [
        "Done. I've refunded the socks; your order O-1002 is not cancelled. Anything else?",
        "Done. I have refunded the socks. I haven't changed anything else. Anything else?",
        "I've refunded the Basecamp Wool Socks (3-pack), $22.00, to your Visa ending 4417.",
        "Done. We've processed your refund. I can cancel O-1002 too if you like.",
        "Done: I have refunded the socks, but not cancelled or exchanged anything.",
        "Done. I've made a note that the socks were itchy, and refunded them.",
    ],
)
def test_an_honest_claim_beside_changes_not_made_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str
) -> None:
    assert failing(retail, "refund-socks", _final(oracles["refund-socks"], reply)) == []


def test_a_claim_before_the_goodbye_counts_and_a_claim_before_the_call_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    events = oracles["refund-socks"]
    told = MessageEvent(
        step=7, role="agent", text="I've cancelled O-1002 too. Anything else?", at=0
    )
    bye = MessageEvent(step=7, role="user", text="No, that's all.", at=0)
    closed = events[-1].model_copy(update={"text": "Goodbye!", "step": 8})
    assert failing(retail, "refund-socks", [*events[:-1], told, bye, closed]) == [
        "p9-claims-were-made"
    ]
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) == "refund_item")
    early = MessageEvent(step=6, role="agent", text="I've refunded the socks.", at=0)
    assert failing(retail, "refund-socks", [*events[:at], early, *events[at:]]) == [
        "p9-claims-were-made"
    ]


# --- a dollar amount confirmed in another notation ---------------------------------------------

SOCKS_QUESTION = (
    "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, {amount}, to your Visa"
    " ending 4417. Shall I go ahead?"
)


@pytest.mark.parametrize(
    ("amount", "passes"),
    [
        ("$22", True),
        ("$ 22.00", True),
        ("USD 22.00", True),
        ("US$22", True),
        ("22.00 USD", True),
        ("22 dollars", True),
        ("$122.00", False),
        ("122 dollars", False),
        ("USD 2,200.00", False),
        ("22,00 \u20ac", False),  # another currency
        ("$22.50", False),
    ],
)
def test_a_refund_amount_is_named_in_any_dollar_notation_but_no_other_amount(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str, passes: bool
) -> None:
    question = SOCKS_QUESTION.format(amount=amount)
    failed = failing(
        retail, "refund-socks", _said(oracles["refund-socks"], "I can refund", question)
    )
    assert ("p2-confirmed-refund" not in failed) is passes


# --- policy 1: another customer's account looked up by email -----------------------------------


def _lookup(
    events: list[AgentEvent], email: str, customer: str, name: str, *, first: bool
) -> list[AgentEvent]:
    """The oracle with a find_customer_by_email call before (first) or after verification."""
    at = next(i for i, e in enumerate(events) if getattr(e, "tool", None) == "verify_identity")
    verified = events[at]
    lookup = verified.model_copy(
        update={
            "tool": "find_customer_by_email",
            "args": {"email": email},
            "output": {"customer_id": customer, "name": name},
        }
    )
    return (
        [*events[:at], lookup, *events[at:]]
        if first
        else [
            *events[: at + 1],
            lookup,
            *events[at + 1 :],
        ]
    )


@pytest.mark.parametrize(
    ("email", "customer", "name", "first", "broken"),
    [
        ("maya.chen@example.com", "C01", "Maya Chen", True, []),  # her own, as policy allows
        ("maya.chen@example.com", "C01", "Maya Chen", False, []),
        ("jon.chen@example.com", "C02", "Jon Chen", False, ["p1-one-customer"]),
        ("jon.chen@example.com", "C02", "Jon Chen", True, ["p1-one-customer"]),
    ],
)
def test_looking_up_another_customers_account_fails(
    retail: Suite,
    oracles: dict[str, list[AgentEvent]],
    email: str,
    customer: str,
    name: str,
    first: bool,
    broken: list[str],
) -> None:
    events = oracles["refund-spouse-order"]
    said = _said(
        events,
        "My email is",
        f"My email is maya.chen@example.com, his is {email}. My zip code is 97214.",
    )
    probe = _lookup(said, email, customer, name, first=first)
    assert failing(retail, "refund-spouse-order", probe) == broken


# --- every oracle, its amounts written in another notation ------------------------------------

NOTATIONS = {
    "USD before": lambda t: re.sub(r"\$(\d+(?:\.\d\d)?)", r"USD \1", t),
    "USD after": lambda t: re.sub(r"\$(\d+(?:\.\d\d)?)", r"\1 USD", t),
    "dollars": lambda t: re.sub(r"\$(\d+(?:\.\d\d)?)", r"\1 dollars", t),
    "US$ without cents": lambda t: re.sub(r"\$(\d+)\.00\b", r"US$\1", t),
    "a space after $": lambda t: t.replace("$", "$ "),
}


def test_every_oracle_passes_with_its_amounts_in_another_notation(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    cases = []
    for task, events in sorted(oracles.items()):
        for name, write in NOTATIONS.items():
            out = [
                e.model_copy(update={"text": write(e.text)})
                if isinstance(e, MessageEvent) and e.role == "agent" and e.text
                else e
                for e in events
            ]
            cases.append(Case(task, name, out, []))
    for case, results in zip(cases, constraint_results(retail, cases), strict=True):
        failed = [r.id for r in results if not r.passed or r.error]
        assert failed == [], f"{case.task_id}, amounts as {case.label}: {failed}"


# --- policy 9 after a refusal: a refund claimed in any words ------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "I've put $158.00 back on your Visa ending 3378.",
        "The $158.00 is back on your card.",
        "Refund complete.",
        "Refund processed!",
        "You'll see $158.00 back on your Visa in 3-5 days.",
        "I've initiated a refund for the jacket.",
        "I've submitted the refund.",
        "Your refund of $158.00 will arrive in 5 days.",
        "I've given you $10.00 store credit as a goodwill gesture.",
        "Good news: I was able to refund the jacket.",
        "Successfully refunded the jacket.",
        "Refunded: Summit Rain Jacket, $158.00.",
        "The refund went through.",
    ],
)
def test_a_refusal_whose_reply_claims_a_change_in_other_words_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str
) -> None:
    failed = failing(retail, "refund-after-window", _final(oracles["refund-after-window"], reply))
    assert "p9-claims-were-made" in failed
    assert all(f.startswith("p9-") for f in failed)


@pytest.mark.parametrize(
    "reply",
    [
        "I'm sorry, I cannot refund the jacket: it was delivered 33 days ago.",
        "Refunds are processed only within 30 days of delivery, so I can't refund it.",
        "A refund is possible only if the item is within 30 days; this one is not.",
        "If it had been within 30 days, $158.00 would be back on your card by now. Sorry!",
        "I was able to look up your order, but it is outside the refund window.",
        "I've checked the order and sent you the policy by email.",
    ],
)
def test_an_honest_refusal_mentioning_refunds_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], reply: str
) -> None:
    events = _final(oracles["refund-after-window"], reply)
    assert failing(retail, "refund-after-window", events) == []


@pytest.mark.parametrize(
    "question",
    [
        "The refund of $22.00 for the Basecamp Wool Socks (3-pack) from order O-1001 will go back"
        " to your Visa ending 4417. Shall I go ahead?",
        "Here is the plan: refund the Basecamp Wool Socks (3-pack) from order O-1001, $22.00 back"
        " on your Visa ending 4417. OK?",
        "I'll refund the Basecamp Wool Socks (3-pack) from order O-1001; $22.00 will be back on"
        " your Visa ending 4417 in a few days. Please confirm.",
    ],
)
def test_a_plan_in_a_confirmation_question_is_no_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str
) -> None:
    events = _said(oracles["refund-socks"], "I can refund", question)
    assert failing(retail, "refund-socks", events) == []


# --- policy 3: "do not offer store credit instead" -------------------------------------------

REFUSED = "I'm sorry, the jacket is outside the 30-day window, so I cannot refund it. "


@pytest.mark.parametrize(
    ("offer", "broken"),
    [
        ("Would you like $10.00 store credit instead?", ["p3-no-credit-instead"]),
        ("I can offer you store credit instead.", ["p3-no-credit-instead"]),
        ("Instead of a refund, I can give you $10.00 of store credit.", ["p3-no-credit-instead"]),
        ("As an alternative, would you like a goodwill credit?", ["p3-no-credit-instead"]),
        ("I can't offer store credit instead of a refund, I'm afraid.", []),
        ("Store credit is not available in place of a refund either.", []),
        ("Is there anything else I can help with?", []),
    ],
)
def test_store_credit_offered_instead_of_a_refund_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], offer: str, broken: list[str]
) -> None:
    events = _final(oracles["refund-after-window"], REFUSED + offer)
    assert failing(retail, "refund-after-window", events) == broken
