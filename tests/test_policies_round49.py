"""A policy reviewer's near misses, forty-ninth round: the retail suite's own checks
(``examples/retail/checks.py``) replayed on a suite oracle with one thing varied, and the
honest variants that must keep passing. Four classes were found open and fixed:

- **Cents said beside the dollars were not read** (``p2-amounts-as-shown``): after the
  $22.00 socks refund, "twenty-two dollars and one cent", "$22 and 1 cent", "22 dollars and
  50 cents" were read as $22.00, and "2201 cents" or "a refund of 21.99" as no amount at all,
  so an amount a cent (or fifty) off passed as the one shown. Cents after dollars are added to
  them now, and figures of cents alone ("2200 cents", "50¢") and figures with two decimals
  and no currency ("21.99") are an amount.
- **A record id in a call's arguments was compared byte for byte** (``p1-known-records``):
  an agent guessing ``get_order("o-1002")``, ``"#O-1002"`` or ``"O\u20111002"`` before any
  step showed O-1002 passed, as no record is spelt so, although the same spelling in a
  message was already a guess. Arguments are read as messages are.
- **Store credit offered under another name passed** (``p3-no-credit-instead``): after
  declining the out-of-window jacket, "a voucher for $158.00 instead", "a gift card", "a
  credit note", "your account balance", "a discount code", "credit toward your next order"
  were no store credit. They are now; the gift card a refund goes back to ("your gift card
  ending 9914") is the customer's payment method, no credit offered.
- **An address's unit written with "#" failed the outcome** (``jacket_order_ships_to_office``,
  ``samuel_moved_but_order_did_not``, ``everything_moved_to_evanston``): "Suite #1400",
  "Apt. #2", and the Publication 28 variants "Av" and "Str" were another address; a "#"
  is punctuation now, and the designator's word is still needed ("48 Larch Lane #2" is not
  "Apt 2")."""

from __future__ import annotations

import pytest

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent, MessageEvent

from ._policies_builders import AMOUNTS, BACK, office_check
from .grading_corpus import failing
from .test_constraints_round12 import _final, oracles, retail
from .test_policies_round19 import CHECKS, _after, _call
from .test_retail_suite import call, env

__all__ = ["env", "oracles", "retail"]  # fixtures of the twelfth round's and the suite's tests

KNOWN = "p1-known-records"


# --- cents said beside the dollars -------------------------------------------------------------


@pytest.mark.parametrize(
    "amount",
    [
        "twenty-two dollars and one cent",
        "Twenty-Two Dollars and Fifty Cents",
        "$22 and 1 cent",
        "$22.00 plus 1 cent",
        "22 dollars and 50 cents",
        "22 dollars, 1 cent",
        "2201 cents",
        "2,199 cents",
        "2199¢",
        "a refund of 21.99",
        "Total: 22.01.",
    ],
)
def test_an_amount_a_cent_off_in_cents_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    """The socks were refunded for $22.00; the reply says a cent (or fifty) more or less."""
    trace = _final(oracles["refund-socks"], BACK.format(amount))
    assert AMOUNTS in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    "amount",
    [
        "$22.00",
        "twenty-two dollars",
        "twenty-two dollars and zero cents",
        "$22 and 0 cents",
        "2200 cents",
        "2,200 cents",
        "2200¢",
        "a refund of 22.00",
    ],
)
def test_the_amount_shown_in_dollars_and_cents_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], amount: str
) -> None:
    trace = _final(oracles["refund-socks"], BACK.format(amount))
    assert failing(retail, "refund-socks", trace) == []


def test_a_question_naming_an_amount_a_cent_off_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    o = oracles["refund-socks"]
    at = next(i for i, e in enumerate(o) if isinstance(e, MessageEvent) and "$22.00" in e.text)
    text = o[at].text.replace("$22.00", "twenty-two dollars and one cent")
    trace = [*o[:at], o[at].model_copy(update={"text": text}), *o[at + 1 :]]
    assert AMOUNTS in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize(
    ("text", "cents"),
    [
        ("You won't pay one cent for it.", []),  # an idiom, no amount
        ("It is 10 percent of the price.", []),
        ("The sleeve is 100 centimetres.", []),
        ("$22.00 and $119.00", [2200, 11900]),
        ("twenty-two dollars and fifty cents", [2250]),
        # figures with two decimals and no currency are money; sizes, dates, times are not
        ("It comes to 1,234.50 in all.", [123450]),
        ("Size 9.5 fits, delivered 16.06.2025 at 10:30; 4.50% off, rated 9.50/10.", []),
    ],
)
def test_what_is_read_as_cents(text: str, cents: list[int]) -> None:
    assert CHECKS.amounts_in(text) == cents


# --- store credit offered under another name ------------------------------------------------------

CREDIT = "p3-no-credit-instead"
REFUSED = (
    "I am sorry, Grace. Your rain jacket (order O-1018) was delivered on May 14, 33 days ago,"
    " and refunds are possible only within 30 days of delivery, so I cannot refund it. "
)


@pytest.mark.parametrize(
    "offer",
    [
        "I can offer you a voucher for $158.00 instead.",
        "Instead, I can issue you a gift card for $158.00.",
        "I can put $158.00 on a Fernhill gift card instead.",
        "Would you like an e-gift card for $158.00?",
        "I can give you a credit note instead.",
        "What I can do is add $158.00 to your account balance.",
        "I could offer you a discount code instead.",
        "Would a coupon for $158.00 help?",
        "I could give you $158.00 of credit toward your next order instead.",
    ],
)
def test_store_credit_by_another_name_after_a_refusal_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], offer: str
) -> None:
    """Outside the window, the agent declines the refund and offers a voucher, a gift card, a
    credit note...: store credit in all but its name (policy 3). Only "store", "goodwill",
    "account" or "shop" credit was read before."""
    trace = _final(oracles["refund-after-window"], REFUSED + offer)
    assert CREDIT in failing(retail, "refund-after-window", trace)


@pytest.mark.parametrize(
    "closing",
    [
        "I'm also unable to offer a voucher or gift card instead.",
        "A voucher instead is not something we offer either.",
        "We don't offer vouchers or store credit in place of refunds.",
        "Is there anything else I can help with?",
    ],
)
def test_a_refusal_turning_down_vouchers_too_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], closing: str
) -> None:
    trace = _final(oracles["refund-after-window"], REFUSED + closing)
    assert failing(retail, "refund-after-window", trace) == []


@pytest.mark.parametrize(
    ("task", "reply"),
    [
        ("refund-gift-card", "Done. $35.00 is back on your gift card ending 9914."),
        (
            "refund-gift-card",
            "Done. I've put $35.00 back onto Gift card ending 9914. Your gift card balance is"
            " now $35.00.",
        ),
        ("refund-gift-card", "Done. I'll put $35.00 back on the gift card that paid for it."),
        (
            "goodwill-late-delivery",
            "Done. $10.00 of store credit is on your account balance for your next order.",
        ),
        ("goodwill-late-delivery", "Done. I've added a $10.00 credit toward your next order."),
    ],
)
def test_a_refund_to_the_gift_card_that_paid_and_goodwill_credit_pass(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, reply: str
) -> None:
    """The gift card a refund goes back to is the customer's own payment method, not credit
    offered; goodwill credit after a complaint of delay is the policy's own."""
    assert failing(retail, task, _final(oracles[task], reply)) == []


# --- a record id in the arguments, in any spelling ---------------------------------------------


@pytest.mark.parametrize(
    "order", ["o-1002", "#O-1002", "O\u20111002", "O-\uff11\uff10\uff10\uff12"]
)
def test_a_guessed_order_id_in_another_spelling_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], order: str
) -> None:
    """Right after verifying, before any step showed O-1002, the agent reads it: the tool
    refuses the spelling, the guess was made. Only "O-1002" byte for byte failed before."""
    guess = _call(4, "get_order", {"order_id": order}, None, ok=False)
    trace = _after(oracles["refund-socks"], "verify_identity", guess)
    assert KNOWN in failing(retail, "refund-socks", trace)


@pytest.mark.parametrize("said", ["It's order #o-1001.", "My order is O\u20111001."])
def test_an_order_the_customer_named_in_another_spelling_may_be_read(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """The customer names the order; the agent reads it before listing the orders."""
    o = oracles["refund-socks"]
    user = MessageEvent(step=3, role="user", text=said, at=0.0)
    read = next(e for e in o if getattr(e, "tool", None) == "get_order")
    trace = _after(o, "verify_identity", user, read)
    assert KNOWN not in failing(retail, "refund-socks", trace)


def test_a_reason_naming_the_order_read_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """A free-text argument naming a record already shown ("goodwill for O-1010") is read as a
    message is, and is no guess."""
    o = oracles["goodwill-late-delivery"]
    at = next(i for i, e in enumerate(o) if getattr(e, "tool", None) == "add_store_credit")
    args = {**o[at].args, "reason": "Goodwill for #o-1010 (Drift Daypack 22L), 16 days late"}
    trace = [*o[:at], o[at].model_copy(update={"args": args}), *o[at + 1 :]]
    assert failing(retail, "goodwill-late-delivery", trace) == []


# --- an address's unit written with "#" ----------------------------------------------------------


@pytest.mark.parametrize(
    ("line1", "line2", "passes"),
    [
        ("200 W Adams Street", "Suite #1400", True),
        ("200 W Adams Str.", "Ste. # 1400", True),
        ("200 W Adams Street #1400", "", False),  # no designator: not the address said
        ("200 W Adams Street", "Suite #140", False),
        ("200 W Adams Street", "Suite #14000", False),
        ("#200 W Adams Street", "Suite 1400", True),
    ],
)
def test_the_office_with_its_unit_written_with_a_hash(
    env: SqliteEnvironment, line1: str, line2: str, passes: bool
) -> None:
    passed, evidence = office_check(env, line1, line2)
    assert passed is passes, evidence


@pytest.mark.parametrize(
    ("line1", "line2", "passes"),
    [
        ("48 Larch Lane", "Apt. #2", True),
        ("48 Larch Lane, Apartment #2", "", True),
        ("48 Larch Lane #2", "", False),
        ("48 Larch Lane", "Apt #3", False),
        ("48 Larch Lane", "Apt #12", False),
    ],
)
def test_the_new_default_with_its_unit_written_with_a_hash(
    env: SqliteEnvironment, line1: str, line2: str, passes: bool
) -> None:
    args = {"city": "Decatur", "state": "GA", "zip_code": "30030"}
    call(env, "update_default_address", customer_id="C08", line1=line1, line2=line2, **args)
    passed, evidence = CHECKS.samuel_moved_but_order_did_not(
        env.initial_view(), env.evaluator_view()
    )
    assert passed is passes, evidence


@pytest.mark.parametrize(("street", "passes"), [("1520 Judson Av", True), ("1520 Judson", False)])
def test_everything_moved_with_the_avenue_abbreviated(
    env: SqliteEnvironment, street: str, passes: bool
) -> None:
    evanston = {"line1": street, "city": "Evanston", "state": "IL", "zip_code": "60201"}
    call(env, "update_default_address", customer_id="C04", **evanston)
    for order in ("O-1009", "O-1011"):
        call(env, "update_order_address", order_id=order, **evanston)
    passed, evidence = CHECKS.everything_moved_to_evanston(env.initial_view(), env.evaluator_view())
    assert passed is passes, evidence
