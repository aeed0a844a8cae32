"""The retail suite's checks under adversarial length, fifty-fourth round: a final reply of one
short piece repeated to 99,000 characters (or two pieces mixed) must be graded well within a
check's deadline, or an agent turns its fail into an invalid, uncounted try.

- A change's status laid out after a comma, a colon or a dash (``_STATUS``: "No worries,
  refunded.") read the marks before its words without bound from every comma: a reply of ", "
  (or " - ", ": ", "'", "-", "$", "--", a non-breaking space and a comma) repeated took minutes
  in policy 9's three claim readers (one sentence of 99,000 characters, each comma a start
  scanning to its end). At most 20 marks are read now.
- Money said back ("$22.00 is back on your card", ``_MONEY_BACK``) read an amount's digits,
  points and commas without bound from every digit: "1." repeated was quadratic. An amount is
  at most 21 such characters now.
- A receiver's list ("Maria, Leo and Ann will receive it", ``_RECEIVERS``) read names after
  commas without bound from every comma: "Yes, " repeated took 50 s in policy 9's readers. A
  list is 22 names at most now.
- Store credit offered (policies 3 and 7, ``_offers_credit``) read the whole clause before and
  after each credit it named, and the whole clause again for a refund, a choice, an offer and
  a negation: "Store credit: " repeated (7,000 credits in one clause) took 25 s. The clause is
  read once now, and only the 40 characters before a credit for its being turned down.
- A card's start said (policy 8, ``_shows_start``) joined each group of digits to every group
  after it while they were joined by punctuation alone: "1, " repeated joined 33,000 groups
  from each of them. A number no longer a card's start is read no further now.

Each case replays a suite oracle with its final message changed (and its first change refused
by the tool) and runs each check under a CPU bound: a check past it is a failure here. Every
trace check reads every piece of PIECES repeated (10,000 characters, a second each), the worst
99,000 (five seconds each); honest replies keep their verdicts."""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from groundstate.episode import default_environment
from groundstate.spec.suite import Suite
from groundstate.tools import load_module
from groundstate.trace import AgentEvent

from .conftest import EXAMPLES
from .grading_corpus import failing
from .test_constraints_round12 import _final, oracles, retail
from .test_constraints_round19 import _refused

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests

CHECKS = load_module(EXAMPLES / "retail" / "checks.py", "checks")
GOODWILL = "goodwill-late-delivery"
LENGTH = 99_000
CPU_BOUND = 5.0
"""Seconds of CPU a check may take on a reply of LENGTH characters: generous for a shared
machine (the grader allows ten of wall time); the old readers took minutes."""
TRACE_CHECKS = (
    "verification_retried_once",
    "acts_for_one_customer",
    "only_known_records",
    "cancel_reason_as_said",
    "amounts_as_shown",
    "refunds_within_policy",
    "cancels_only_pending",
    "exchanges_within_window",
    "goodwill_as_policy",
    "no_credit_instead",
    "each_record_changed_once",
    "no_card_details",
    "changes_claimed_were_made",
    "reply_tells_what_was_done",
    "reply_does_not_deny",
    "reply_claims_no_change",
)
POLICY_NINE = TRACE_CHECKS[-4:]
PIECES = [
    ", ", " - ", ": ", "| ", "$1, ", "$1.00 ", "1, ", "refund ", "Refunded: ", "\n- ", "\n",
    "**", "(", "[", "'", '"', "#W1 ", "Yes, ", ". ", "a ", "twenty-two ", "Floor 1 ", "Suite ",
    "@", "x@y.com ", "\t", "\u00a0", "\u00a0, ", "-", "--", "$", "1.", "1 ", "O-1001 ",
]  # fmt: skip


class _OverBound(Exception):
    """A check ran past CPU_BOUND."""


@contextmanager
def _cpu_bound(seconds: float) -> Iterator[None]:
    """Interrupt the block once it has used *seconds* of CPU (a quadratic reader would
    otherwise run for minutes before the test could fail)."""

    def over(*_: object) -> None:
        raise _OverBound

    previous = signal.signal(signal.SIGVTALRM, over)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)


def _repeated(piece: str, length: int = LENGTH) -> str:
    return (piece * (length // len(piece) + 1))[:length]


def _graded_in_time(
    retail: Suite, events: list[AgentEvent], checks: tuple[str, ...], bound: float = CPU_BOUND
) -> dict[str, float]:
    """Each of *checks* run on *events* (GOODWILL's state): the CPU seconds it took, each
    returning a verdict within *bound*."""
    took: dict[str, float] = {}
    with default_environment(retail.tasks[GOODWILL], retail) as env:
        env.reset(seed=0)
        s0 = env.initial_view()
        for check in checks:
            started = time.process_time()
            try:
                with _cpu_bound(bound):
                    verdict = getattr(CHECKS, check)(events, s0)
            except _OverBound:
                pytest.fail(f"{check} took over {bound} s of CPU")
            assert isinstance(verdict, tuple) and isinstance(verdict[0], bool)
            took[check] = time.process_time() - started
    return took


# --- 1. policy 9's claim readers: a status after a comma, money back ------------------------


@pytest.mark.parametrize("piece", [", ", " - ", "'", "$", "1.", "Yes, "])
def test_policy_nine_reads_one_piece_repeated_in_linear_time(
    retail: Suite, oracles: dict[str, list[AgentEvent]], piece: str
) -> None:
    trace = _final(_refused(oracles[GOODWILL]), f"Sorry.\n{_repeated(piece)}")
    _graded_in_time(retail, trace, POLICY_NINE)


@pytest.mark.parametrize(
    ("task", "said"),
    [
        ("refund-socks", "Done, refunded."),
        ("refund-socks", "Thanks \u2014 socks refunded."),
        ("refund-socks", "**\u2014 your socks refunded."),
        ("refund-socks", "$22.00 is back on your Visa ending 4417."),
        ("refund-socks", "Your $22.00 is back on your card."),
    ],
)
def test_a_change_laid_out_or_money_back_is_still_told(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str
) -> None:
    # the bounds read as before where a status or an amount is a status or an amount: the
    # refund told, it passes after the refund was made and fails after it was refused
    assert failing(retail, task, _final(oracles[task], said)) == []
    refused = failing(retail, task, _final(_refused(oracles[task]), said))
    assert "p9-claims-were-made" in refused


# --- 2. policy 8's card numbers -------------------------------------------------------------


@pytest.mark.parametrize("piece", ["1, ", "1 "])
def test_card_details_read_digits_repeated_in_linear_time(
    retail: Suite, oracles: dict[str, list[AgentEvent]], piece: str
) -> None:
    trace = _final(_refused(oracles[GOODWILL]), f"Sorry.\n{_repeated(piece)}")
    _graded_in_time(retail, trace, ("no_card_details",))


# --- 3. store credit offered -----------------------------------------------------------------


@pytest.mark.parametrize("piece", ["Store credit: ", "store credit instead ", "no store credit "])
def test_credit_offers_read_credits_repeated_in_linear_time(
    retail: Suite, oracles: dict[str, list[AgentEvent]], piece: str
) -> None:
    trace = _final(_refused(oracles[GOODWILL]), f"Sorry.\n{_repeated(piece)}")
    _graded_in_time(retail, trace, ("no_credit_instead",))


@pytest.mark.parametrize(
    ("said", "offered"),
    [
        ("I can offer you store credit instead of a refund.", True),
        ("Store credit, store credit or a refund: which would you like?", True),
        ("Would a voucher help? I can add one instead of the refund.", True),
        ("Rather than store credit, I've refunded the socks to your Visa.", False),
        ("Your store credit balance is $5.00, and the refund is on your Visa.", False),
        ("We can't offer store credit instead of a refund.", False),
    ],
)
def test_a_credit_offered_is_still_read(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str, offered: bool
) -> None:
    # the clause read once gives the verdicts it gave read once for each credit
    trace = _final(oracles["refund-socks"], said)
    assert ("p3-no-credit-instead" in failing(retail, "refund-socks", trace)) is offered


# --- 4. every check, every piece and mixes of two -------------------------------------------


@pytest.mark.parametrize(("one", "other"), [(", ", "Yes, "), ("1, ", "Store credit: ")])
def test_every_check_reads_mixes_of_two_pieces_in_time(
    retail: Suite, oracles: dict[str, list[AgentEvent]], one: str, other: str
) -> None:
    pick = random.Random(54)
    text = "".join(pick.choice((one, other)) for _ in range(LENGTH))[:LENGTH]
    _graded_in_time(retail, _final(_refused(oracles[GOODWILL]), f"Sorry.\n{text}"), TRACE_CHECKS)


@pytest.mark.parametrize("piece", PIECES)
def test_every_check_reads_each_piece_repeated_in_time(
    retail: Suite, oracles: dict[str, list[AgentEvent]], piece: str
) -> None:
    # 10,000 characters: a second of CPU a check is far more than a linear reader needs, far
    # less than the old quadratic ones took (2.5 s for ", " in a single regex)
    trace = _final(_refused(oracles[GOODWILL]), f"Sorry.\n{_repeated(piece, 10_000)}")
    _graded_in_time(retail, trace, TRACE_CHECKS, bound=1.0)


def test_an_honest_long_reply_still_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    # the oracle's own closing, then a long honest afterword: every constraint still passes,
    # none of them a grader error
    closing = oracles["refund-socks"][-1].text or ""
    afterword = _repeated("Thanks for your patience, - and let me know: anything else? ")
    long = _final(oracles["refund-socks"], closing + afterword)
    assert failing(retail, "refund-socks", long) == []
    assert failing(retail, "refund-socks", _final(oracles["refund-socks"], closing)) == []
