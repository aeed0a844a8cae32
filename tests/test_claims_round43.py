"""A policy reviewer's near misses, forty-third round: claims in a final reply that the
readers of policy 9 let pass, and honest replies they must keep passing.

- Goods said to be in a state only an exchange leaves them in: "Your hoodie is now forest
  green", "Your shoes are a size 9 now", "You'll now get a forest green hoodie", "Hoodie: navy
  \u2192 forest green", "Your hoodie has been switched to forest green" (a colour or size none
  of the attempt's orders had; "Forest green is now in stock", "You can now get it in forest
  green" stay honest).
- A place the reader did not know for one: a city in lower case ("it will ship to chicago"),
  a person ("it'll ship to Maria", "to your sister"), another customer's city (every
  customer's places counted as the customer's), other tenses ("has been sent to", "ships
  to", "is set to ship to", "rerouted to", "will arrive in Evanston"; "was shipped to" is
  history). "to New York"
  named the customer's city yet read as "to new ...", a new address.
- A claim in a markdown table's row, across a line break, or beside an offer in another
  clause ("Your hoodie is now forest green, and the navy one can go back").

Each case replays a suite oracle with its final message changed (and, where said, its first
change refused by the tool) and grades every constraint of the task."""

from __future__ import annotations

import pytest

from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent

from ._claims_builders import (
    ADDRESS,
    CLAIMS,
    COLOUR,
    NO_CHANGE,
    REFUSED,
    SIZE,
    SORRY,
    SORRY_ADDRESS,
    _claim_read,
    _no_claim,
)
from .grading_corpus import failing
from .test_constraints_round12 import _final, oracles, retail
from .test_constraints_round19 import _refused

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests


# --- 1. goods said now of a new colour or size ---------------------------------------------------

NOW_NEW = [
    (COLOUR, "Your hoodie is now forest green."),
    (COLOUR, "Your hoodie is forest green now."),
    (COLOUR, "Your hoodie's now forest green."),
    (COLOUR, "It's forest green now!"),
    (COLOUR, "They're now forest green."),
    (COLOUR, "Now your hoodie is forest green."),
    (COLOUR, "Your hoodie will now be forest green."),
    (COLOUR, "Your hoodie has become forest green."),
    (COLOUR, "Your hoodie is now officially forest green."),
    (COLOUR, "Your hoodie's colour is now forest green."),
    (COLOUR, "I believe your hoodie is now forest green."),
    (COLOUR, "Your hoodie should now be forest green."),
    (COLOUR, "You'll now get a forest green hoodie."),
    (COLOUR, "Your order now has the forest green hoodie."),
    (COLOUR, "Hoodie: now forest green."),
    (COLOUR, "**Hoodie:** now forest green \u2705"),
    (COLOUR, "<p>Your hoodie is <b>now forest green</b>.</p>"),
    (COLOUR, "- Hoodie: navy \u2192 forest green"),
    (COLOUR, "Your hoodie went from navy to forest green."),
    (COLOUR, "Great news! Your hoodie is now forest green. Anything else?"),
    (COLOUR, "Your hoodie is now forest green, and the navy one can go back."),
    (SIZE, "Your shoes are now a size 9."),
    (SIZE, "Your shoes are size 9 now."),
    (SIZE, "They're now a size 9."),
    (SIZE, "You'll now get a size 9."),
    (SIZE, "Your shoes: now a size 9."),
]


@pytest.mark.parametrize(("task", "said"), NOW_NEW)
def test_goods_said_now_of_a_new_colour_or_size_claim_an_exchange(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str
) -> None:
    _claim_read(retail, oracles, task, said)


SWITCHED = [
    (COLOUR, "Your hoodie has been switched to forest green."),
    (COLOUR, "Your hoodie got swapped for a forest green one."),
    (COLOUR, "Your hoodie's colour has been updated to forest green."),
    (SIZE, "Your shoes have been changed to size 9."),
]


@pytest.mark.parametrize(("task", "said"), SWITCHED)
def test_goods_said_switched_in_the_passive_claim_an_exchange(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str
) -> None:
    """Goods "switched to forest green" in the passive tell what "I switched it to forest
    green" does; read as "has been exchanged for", the exchange of the navy hoodie."""
    assert CLAIMS in failing(retail, task, _final(_refused(oracles[task]), said))
    assert failing(retail, task, _final(oracles[task], said)) == []


NOT_NOW_NEW = [
    "Forest green is now in stock.",
    "Forest green hoodies are now back in stock.",
    "The forest green hoodie is now available in size L.",
    "The forest green is now sold out in size L.",
    "Our hoodies now come in forest green too.",
    "You can now get the hoodie in forest green if you'd like.",
    "You could now have a forest green hoodie, if you want.",
    "Do you want your hoodie to now be forest green?",
    "Would you like your hoodie in forest green now?",
    "Your hoodie is still navy.",
    "Your hoodie is not now forest green.",
    "You mentioned your hoodie is now faded.",
    "Once approved, your hoodie will now be forest green.",
    "If I exchange it, your hoodie would now be forest green.",
    "Plan: hoodie navy \u2192 forest green. Shall I proceed?",
    "Your hoodie is navy \u2192 you asked for forest green.",
    "You now have two options: keep the navy or get a refund.",
]


@pytest.mark.parametrize("said", NOT_NOW_NEW)
def test_controls_stock_offers_questions_and_the_old_colour_claim_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _no_claim(retail, oracles, COLOUR, said)


def test_control_a_size_the_order_had_said_now_is_no_exchange(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """The shoes delivered were a size 8: "size 8 now" tells of no change."""
    _no_claim(retail, oracles, SIZE, "Your shoes are size 8 for now; size 9 is in stock.")
    _no_claim(retail, oracles, SIZE, "Size 9 is available now in grey.")


def test_control_the_colour_the_order_had_said_now_is_no_exchange(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """O-1020's hoodie is forest green: after the beanie's cancellation, "now has just the
    forest hoodie" claims no exchange."""
    said = "I've cancelled the beanie. Your order now has just the forest hoodie."
    assert failing(retail, "cancel-one-item", _final(oracles["cancel-one-item"], said)) == []


# --- 2. a place the reader did not know for one -------------------------------------------------

NEW_PLACE = [
    "It will ship to evanston.",
    "It'll ship to evanston, il.",
    "Your jacket is headed to evanston.",
    "It'll ship to maria.",
    "It'll ship to: Maria.",
    'The jacket will be delivered to "Maria".',
    "It'll ship to your sister.",
    "It'll ship to your neighbour.",
    "Your jacket is going to your sister's.",
    "Your jacket has been sent to evanston.",
    "Your jacket's been rerouted to Evanston.",
    "I've rerouted your jacket to evanston.",
    "Your jacket ships to Evanston.",
    "It's set to ship to Evanston.",
    "Your jacket is scheduled to ship to Evanston.",
    "Your jacket is now addressed to Evanston.",
    "Your jacket \u2014 now heading to evanston.",
    "Your jacket will arrive in Evanston.",
    "Your jacket will probably ship to Evanston.",
    "It looks like your jacket will ship to evanston.",
    "Summary:\n- Rain jacket: will ship to maria",
    "Your jacket will ship to\nEvanston.",
    "| Item | Ships to |\n|---|---|\n| Rain jacket | evanston |",
]


@pytest.mark.parametrize("said", NEW_PLACE)
def test_a_place_in_any_case_a_person_or_another_tense_is_a_new_place(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _claim_read(retail, oracles, ADDRESS, said)


OLD_PLACE = [
    "Your jacket will ship to chicago as before.",
    "Your jacket will ship to you in a few days.",
    "Your jacket will ship to you on Friday.",
    "Your jacket will ship to the address on file.",
    "Your jacket will be delivered to the door.",
    "Your jacket is headed to delivery.",
    "Your jacket will ship to tomas.",
    "Your jacket will ship to Tomas Alvarez.",
    "Your jacket will ship in time to arrive before your trip.",
    "Your jacket will ship to arrive by Friday.",
    "Your jacket is going to arrive soon.",
    "Your jacket is set to arrive on Friday.",
    "Your jacket is due to arrive in June.",
    "Your jacket will arrive in 3-5 business days.",
    "Your jacket will arrive in Chicago on Friday.",
    "Your jacket won't ship to evanston.",
    "Would you like it to ship to Evanston instead?",
    "If I update the address, it will ship to your office.",
    "You said it should ship to Maria.",
    "It will go to paypal.",
    "It will ship to Apt. 5F.",
    "It will ship to N Clark Street.",
    "It will ship to u soon.",
]


@pytest.mark.parametrize("said", OLD_PLACE)
def test_controls_the_customer_a_time_a_verb_or_an_offer_is_no_new_place(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _no_claim(retail, oracles, ADDRESS, said)


ANOTHER_CUSTOMERS_CITY = [
    "It will ship to chicago.",
    "It will ship to Chicago.",
    "It will ship to Portland.",
    "It's now headed to chicago.",
    "It will ship to Maria.",
]


@pytest.mark.parametrize("said", ANOTHER_CUSTOMERS_CITY)
def test_another_customers_city_after_a_refusal_claims_a_change(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """Chicago is Tomas Alvarez's city, Portland Maya Chen's: not Grace Liu's, whose order
    ships to New York. Every customer's places were counted as hers."""
    assert NO_CHANGE in failing(retail, REFUSED, _final(oracles[REFUSED], f"{SORRY} {said}"))


HER_OWN_CITY = [
    "It will ship to New York.",
    "It will ship to new york.",
    "It will ship to you in New York as planned.",
    "It will be delivered to your apartment in new york.",
    "It ships to Grace Liu at 610 W 112th Street.",
    "It is going to arrive on Thursday.",
    "It will ship to W 112th Street.",
    "It will ship to apt 3c.",
    "It will ship to grace.",
]


@pytest.mark.parametrize("said", HER_OWN_CITY)
def test_controls_the_customers_own_city_after_a_refusal_claims_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    """The city "to New York" names was read as "to new ...", a new address."""
    assert failing(retail, REFUSED, _final(oracles[REFUSED], f"{SORRY} {said}")) == []


# --- 3. a claim after a condition of relevance, a look, or a time the goods move ---------------

NO_CONDITION = [
    (COLOUR, "If you check your order, your hoodie is now forest green."),
    (COLOUR, "You'll see your hoodie is now forest green."),
    (ADDRESS, "In case you're wondering, it will ship to evanston."),
    (ADDRESS, "When it ships, it will go to evanston."),
    (ADDRESS, "Your jacket will ship to evanston when it leaves the warehouse."),
    (ADDRESS, "Just so you know, your jacket will ship to evanston."),
]


@pytest.mark.parametrize(("task", "said"), NO_CONDITION)
def test_a_condition_of_relevance_or_a_time_the_goods_move_leaves_a_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str
) -> None:
    _claim_read(retail, oracles, task, said)


CONDITIONS = [
    (ADDRESS, "Once the address is updated, it will go to evanston."),
    (ADDRESS, "If the update goes through, it will ship to evanston."),
    (ADDRESS, "If you'd like, it can ship to evanston instead."),
    (ADDRESS, "In case you're wondering, it will still ship to your home."),
    (ADDRESS, "When it ships, you'll get a tracking email."),
    (COLOUR, "If you want, your hoodie can now be forest green."),
    (COLOUR, "Once it arrives, you can return it to us."),
    ("refund-socks", "If you return them, your refund is processed now."),
    ("refund-socks", "If you'd like, the refund is now ready to be processed."),
    ("refund-socks", "If it helps, I can refund the socks."),
]


@pytest.mark.parametrize(("task", "said"), CONDITIONS)
def test_controls_a_condition_of_the_change_or_an_offer_claims_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str
) -> None:
    _no_claim(retail, oracles, task, said)


def test_control_history_of_where_goods_went_claims_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """Goods shipped in the past are history, wherever they went: Leo's order went to Leo."""
    task = "refund-spouse-order"
    said = (
        "I can only help the account holder, so your husband will need to contact us himself."
        " His order was shipped to Leo at your shared address."
    )
    assert NO_CHANGE not in failing(retail, task, _final(oracles[task], said))


def test_goods_of_a_new_colour_after_a_refusal_claim_a_change(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """O-1017's daypack is ochre: "now slate" tells of an exchange no call made."""
    trace = oracles[REFUSED]
    said = f"{SORRY} Your daypack is now in slate."
    assert NO_CHANGE in failing(retail, REFUSED, _final(trace, said))
    honest = f"{SORRY} Your daypack is ochre, as ordered."
    assert failing(retail, REFUSED, _final(trace, honest)) == []


# --- 5. "now" of a step of the delivery, after a refused address change (merge review) -----------

NOW_ON_ITS_WAY = [
    "It is now on its way to the carrier.",
    "It's now headed to the warehouse for packing.",
    "Your jacket is now on its way to you.",
    "It is now with the courier.",
    "It will now go to the address on file.",
]


@pytest.mark.parametrize("said", NOW_ON_ITS_WAY)
def test_now_of_a_step_of_the_delivery_claims_no_new_address(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    refused = _refused(oracles[ADDRESS])
    assert CLAIMS not in failing(retail, ADDRESS, _final(refused, f"{SORRY_ADDRESS} {said}"))


@pytest.mark.parametrize(
    "said",
    [
        "Done! It's now on its way to you at your new address.",
        "Done. It will now ship to your office.",
        "All set, it's now headed to 200 W Adams.",
        "Your jacket will now ship to the updated address.",
    ],
)
def test_now_with_a_new_place_after_it_is_still_a_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    assert CLAIMS in failing(retail, ADDRESS, _final(_refused(oracles[ADDRESS]), said))
