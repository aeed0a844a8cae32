"""A policy reviewer's near misses, fifty-sixth round: claims in a final reply that the readers
of policy 9 let pass, and honest replies they must keep passing.

- Money back told of another time or another order ("You got $22.00 off last time", "On your
  last order you got $22.00 back", "In March, we refunded you $10", "You were refunded $22.00
  for a previous return", "Last year's refund of $5 went to your Visa") was read as a claim of
  this conversation: a clause placing what it tells at another time, with no word of now, is
  history (its claims of now, "You've got $22.00 back", "I refunded $22.00", are read).
- Two labels on one line with no dash or bar between ("Refund: $35.00 Store credit: $5.00")
  were one field, a refund of $40.00 claimed; a second label after a bar ("Refund: $35.00 |
  Store credit: $5.00") was not read at all, a false credit claim passed.
- Words stating no change in a label's field ("Refund: $22.00 (pending) \u2014 Credit:
  $5.00") left the line's next label unread.
- Each changed reader takes linear time on a reply of one short piece repeated.

Each case replays a suite oracle with its final message changed (and, where said, its first
change refused by the tool, or a ``get_customer`` call added) and grades every constraint of
the task."""

from __future__ import annotations

import random
import time

import pytest

from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent

from ._claims_builders import CLAIMS, SOCKS, TELLS, _claim_read, _no_claim, policy_nine
from .grading_corpus import failing
from .test_claims_round53 import CHECKS, GIFT, GIFT_DONE, GOODWILL, _customer_read
from .test_constraints_round12 import _final, oracles, retail
from .test_constraints_round19 import _refused

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests

DONE = "I've refunded the socks, $22.00, to your Visa ending 4417."

# --- 1. money back of another time or another order ------------------------------------------

HISTORY = [
    "You got $22.00 off last time.",
    "On your last order you got $22.00 back.",
    "In March we refunded you $10.",
    "In March, we refunded you $10.",
    "in march we refunded you $10",
    "You were refunded $22.00 for a previous return.",
    "Last year's refund of $5 went to your Visa.",
    "Last year, you received $22.00 back on your Visa.",
    "You got $22.00 back yesterday.",
    "We refunded $22.00 to your Visa back in 2023.",
    "You got $22.00 back last time, so this refund is the same.",
]


@pytest.mark.parametrize("said", HISTORY)
def test_money_back_of_another_time_is_no_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _no_claim(retail, oracles, SOCKS, said)


@pytest.mark.parametrize("said", HISTORY)
def test_money_back_of_another_time_beside_the_claim_keeps_it_honest(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    graded = failing(retail, SOCKS, _final(oracles[SOCKS], f"{DONE} {said}"))
    assert [found for found in graded if found.startswith("p9")] == []


@pytest.mark.parametrize(
    "said",
    [
        "You've got $22.00 back.",
        "I refunded $22.00.",
        "You got $22.00 back.",
        "I refunded $22.00 to the Visa you used last time.",
        "I refunded $22.00, just like last time.",
        "Like last time, I refunded $22.00 to your Visa.",
        "You've got $22.00 back on your last order.",
        "Last time, you got $10 back; this time I've refunded $22.00.",
        "Unlike last time, you got $22.00 back.",
        "I've refunded $22.00 today; in March you got nothing back.",
    ],
)
def test_controls_money_back_of_now_is_still_a_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    _claim_read(retail, oracles, SOCKS, said)
