"""A policy reviewer's near misses, forty-second round: claims in a final reply that the
readers of policy 9 let pass, and honest replies they must keep passing.

- A claim after an opening condition or offer: "If you prefer, the socks have been refunded."
  ("If you prefer, I can refund the socks." stays an offer.)
- "Your exchange is set", "The refund is sorted", "I was able to get the socks refunded", "We
  managed to get the socks refunded".
- An exchange told only by the goods: "Your forest green hoodie is on the way", "Switched
  your hoodie to forest green" (a colour none of the attempt's orders had; "Your navy hoodie
  is on the way" is none).
- A city or a unit as the new place: "will ship to Evanston", "headed to Suite 1400" ("will
  ship to your home in Chicago", the stored city, is none).

Each case replays a suite oracle with its final message changed (and, where said, its first
change refused by the tool) and grades every constraint of the task."""

from __future__ import annotations

import pytest

from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent

from ._claims_builders import ADDRESS, CLAIMS, COLOUR, _claim_read, _no_claim
from .grading_corpus import failing
from .test_constraints_round12 import _final, oracles, retail
from .test_constraints_round19 import _refused

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests


# --- 1. a claim after an opening condition or offer --------------------------------------------

AFTER_CONDITION = [
    ("refund-socks", "If you prefer, the socks have been refunded."),
    ("refund-socks", "If you'd like, I've refunded the socks."),
    ("refund-socks", "If you want, I refunded the socks."),
    ("refund-socks", "If you'd like, your refund has been processed."),
    ("refund-socks", "If it helps, the refund went through."),
    ("cancel-pending-order", "If you were wondering, O-1002 has been cancelled."),
]


@pytest.mark.parametrize(("task", "said"), AFTER_CONDITION)
def test_a_claim_after_an_opening_condition_is_a_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str
) -> None:
    _claim_read(retail, oracles, task, said)


UNDER_CONDITION = [
    "If you prefer, I can refund the socks.",
    "If you prefer, I could refund the socks.",
    "If you prefer, the socks can be refunded.",
    "If you'd like, I haven't refunded the socks yet.",
    "If the refund went through, you'll see $22.00 on your Visa.",
    "If the socks have been refunded, you would see $22.00.",
    "If you'd like the refund, I will process it.",
    "Once approved, your refund is processed within 5 days.",
    "Had the refund gone through, you would see $22.00 on your Visa.",
]


@pytest.mark.parametrize("said", UNDER_CONDITION)
def test_controls_offers_and_conditions_after_an_opening_condition_claim_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _no_claim(retail, oracles, "refund-socks", said)


# --- 2. "is set", "was able to get ... refunded" -----------------------------------------------

SET = [
    ("exchange-shoe-size", "Your exchange is set."),
    (COLOUR, "Your exchange is all set."),
    ("refund-socks", "Your refund is set."),
    ("refund-socks", "The refund is sorted."),
    ("cancel-pending-order", "Your cancellation is all set."),
    ("refund-socks", "I was able to get the socks refunded."),
    ("refund-socks", "We managed to get the socks refunded."),
    ("refund-socks", "We were able to get your refund processed."),
    ("refund-socks", "We got the socks refunded."),
]


@pytest.mark.parametrize(("task", "said"), SET)
def test_a_change_said_set_or_got_done_is_a_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str
) -> None:
    _claim_read(retail, oracles, task, said)


NOT_SET = [
    "I wasn't able to get the socks refunded.",
    "I was not able to get the socks refunded.",
    "Your refund is set to go through once the return arrives.",
    "The refund amount is set at $22.00 if you return them.",
    "Is your refund all set?",
    "Your refund will be set up once you confirm.",
]


@pytest.mark.parametrize("said", NOT_SET)
def test_controls_a_change_not_set_claims_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _no_claim(retail, oracles, "refund-socks", said)


# --- 3. an exchange told by the goods' colour or size -----------------------------------------

BY_THE_GOODS = [
    (COLOUR, "Your forest green hoodie is on the way."),
    (COLOUR, "Your hoodie in forest green will ship tomorrow."),
    (COLOUR, "A forest green hoodie is headed your way."),
    (COLOUR, "Switched your hoodie to forest green."),
    (COLOUR, "I switched your hoodie to forest green."),
    (COLOUR, "I've changed your hoodie to the forest colour."),
    ("exchange-shoe-size", "Switched your shoes to a size 9."),
]


@pytest.mark.parametrize(("task", "said"), BY_THE_GOODS)
def test_an_exchange_told_by_the_goods_colour_or_size_is_a_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str
) -> None:
    _claim_read(retail, oracles, task, said)


NOT_BY_THE_GOODS = [
    "Your navy hoodie is on the way.",
    "I can switch your hoodie to forest green if you like.",
    "No forest green hoodie is on its way.",
    "Your forest green hoodie won't ship, since the exchange failed.",
]


@pytest.mark.parametrize("said", NOT_BY_THE_GOODS)
def test_controls_goods_of_the_old_colour_offered_or_denied_claim_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _no_claim(retail, oracles, COLOUR, said)


def test_control_goods_of_a_colour_the_order_had_are_no_exchange(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """O-1020's hoodie is forest green: it shipping as usual claims no exchange."""
    said = "I've cancelled the beanie; your forest hoodie will ship as usual."
    assert failing(retail, "cancel-one-item", _final(oracles["cancel-one-item"], said)) == []


# --- 4. a city or a unit as the new place ------------------------------------------------------

NEW_PLACE = [
    "Your rain jacket will ship to Evanston.",
    "Your rain jacket will ship to Evanston, IL.",
    "Your rain jacket will ship to your home in Evanston.",
    "Your jacket is headed to Suite 1400.",
    "Your jacket will be delivered to Suite 1400, 200 W Adams.",
]


@pytest.mark.parametrize("said", NEW_PLACE)
def test_a_city_or_unit_none_of_the_orders_had_is_a_new_place(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _claim_read(retail, oracles, ADDRESS, said)


OLD_PLACE = [
    "Your rain jacket will ship to your home in Chicago.",
    "Your rain jacket will ship to you in June.",
    "Your rain jacket will ship to you at your home.",
    "Your rain jacket will ship to Apt 5F as before.",
    "Your rain jacket will still ship to your home in Chicago, not Suite 1400.",
]


@pytest.mark.parametrize("said", OLD_PLACE)
def test_controls_the_stored_city_or_unit_is_no_new_place(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _no_claim(retail, oracles, ADDRESS, said)


def test_a_new_city_after_a_refusal_fails_the_refusal_check(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    task = "cancel-processing-refused"
    said = "Sorry, O-1017 can't be cancelled. It will ship to Evanston."
    assert "p9-reply-claims-no-change" in failing(retail, task, _final(oracles[task], said))
    honest = "Sorry, O-1017 can't be cancelled. It will still ship to your home."
    assert failing(retail, task, _final(oracles[task], honest)) == []


def test_controls_a_we_form_under_a_condition_abroad_stays_the_present(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """Under a condition, "reembolsamos" is "we refund", not "we refunded"."""
    for said in ["Si quieres, reembolsamos los calcetines.", "Se quiser, reembolsamos as meias."]:
        assert CLAIMS not in failing(
            retail, "refund-socks", _final(_refused(oracles["refund-socks"]), said)
        ), said
