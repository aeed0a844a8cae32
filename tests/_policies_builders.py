"""What the retail policy tests of the forty-ninth round on share: the amounts policy's id, the
replies they vary, the oracle with more said first, an address as the checks read it, and a
long reply's reading time."""

from __future__ import annotations

import time

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.trace import AgentEvent, MessageEvent

from .test_policies_round19 import CHECKS
from .test_retail_suite import call

AMOUNTS = "p2-amounts-as-shown"
RETRIED = "p1-verify-retried-once"
BACK = "Done. {} is on its way back to your Visa ending 4417. Is there anything else?"
SHOWN = "Done. $22.00 is on its way back to your Visa ending 4417. {}"
STREET = "200 W Adams Street"
CHICAGO = ("Chicago", "IL", "60606")
OFFICE = {"city": "Chicago", "state": "IL", "zip_code": "60606"}
"""The office's city, state and zip code, as the address tools take them."""


def said_first(events: list[AgentEvent], words: str) -> list[AgentEvent]:
    """The oracle with the customer's first message saying *words* too."""
    first = events[0]
    assert isinstance(first, MessageEvent) and first.role == "user"
    return [first.model_copy(update={"text": f"{first.text} {words}"}), *events[1:]]


def address(line1: str, line2: str = "") -> str:
    """The address the checks compare for *line1* and *line2* in Chicago."""
    return str(CHECKS._address(line1, line2, *CHICAGO))


def money_read_in_time(unit: str) -> None:
    """A reply of *unit* repeated to 100,000 characters has its money read in under 5 s of CPU."""
    text = unit * (100_000 // len(unit))
    started = time.process_time()
    CHECKS.money_in(text)
    assert time.process_time() - started < 5


def office_check(env: SqliteEnvironment, line1: str, line2: str) -> tuple[bool, str]:
    """The change-order-address check after order O-1009 was sent to *line1*, *line2* in the
    office's city (:data:`OFFICE`)."""
    call(env, "update_order_address", order_id="O-1009", line1=line1, line2=line2, **OFFICE)
    return CHECKS.jacket_order_ships_to_office(env.initial_view(), env.evaluator_view())
