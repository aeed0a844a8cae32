"""A policy reviewer's near misses, twenty-fourth round: a choice answered without a yes word,
a yes picking the other option of a choice, a claim split across two messages, goods "on
their way" after a change that sends none, and amounts written the Swiss, British or
"22,-" way.

- A question offering a choice ("... $22.00. Would you like it on your Visa ending 4417 or
  your gift card?") answered by the choice alone ("The Visa please.", "The first one.",
  "Both.") confirmed nothing: only a yes word was read as agreeing, so a compliant refund
  failed ``p2-confirmed-refund``. And a yes picking the other option ("Yes, the gift card",
  "Yes, the second one") confirmed the refund to the Visa, since both options were in the
  question and the gift card no record a tool showed.
- A success claim split across two agent messages ("I've gone ahead and" / "processed that
  for you.") was read as two pieces, neither a claim: it passed ``p9-claims-were-made`` after
  a refused refund and ``p9-reply-claims-no-change`` when nothing was to change, and failed
  ``p9-reply-tells-what-was-done`` after the refund was made.
- "Your order is on its way." after a refund, a cancellation or store credit told the
  customer the change was made (``p9-reply-tells-what-was-done``); it tells of goods sent,
  so only of an exchange or an order's new address. "Your $22.00 is on its way." (money by
  its amount) was no claim at all.
- "€ 25,-", "£25", "CHF 1'234.50" were no amount to ``p2-amounts-as-shown``.

Each case replays a suite oracle with messages changed and grades every constraint of the
task, the Python checks included."""

from __future__ import annotations

import pytest

from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent, MessageEvent

from .grading_corpus import failing
from .test_constraints2_round20 import _asked
from .test_constraints_round12 import _final, oracles, retail
from .test_constraints_round19 import _refused

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests

REFUND = "p2-confirmed-refund"
CLAIMS = "p9-claims-were-made"
NO_CHANGE = "p9-reply-claims-no-change"
TOLD = "p9-reply-tells-what-was-done"
AMOUNTS = "p2-amounts-as-shown"

# --- 1. a choice answered by the choice -------------------------------------------------------

CHOICE = (
    "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, $22.00. Would you like it "
    "on your Visa ending 4417 or your gift card?"
)
"""The oracle refunds the socks to the Visa."""


def _chose(
    oracles: dict[str, list[AgentEvent]], answer: str, question: str = CHOICE
) -> list[AgentEvent]:
    return _asked(oracles["refund-socks"], question, answer)


@pytest.mark.parametrize(
    "answer",
    ["The Visa please.", "The Visa ending 4417.", "Visa", "To the Visa.", "The first one.", "visa"],
)
def test_the_choice_the_change_made_answered_without_a_yes_word_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """ "The Visa please." to "on your Visa ... or your gift card?" failed
    `p2-confirmed-refund`: no yes word."""
    assert failing(retail, "refund-socks", _chose(oracles, answer)) == []


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, the gift card.",
        "Yes, gift card please",
        "Yes, the second one.",
        "Sure, the latter.",
        "OK, the gift card then.",
    ],
)
def test_a_yes_picking_the_other_option_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """ "Yes, the gift card." to "Visa ending 4417 or your gift card?", then a refund to the
    Visa, passed: both were in the question, and the gift card no record a tool showed."""
    assert REFUND in failing(retail, "refund-socks", _chose(oracles, answer))


@pytest.mark.parametrize(
    "answer",
    [
        "The gift card.",
        "gift card please",
        "The second one.",
        "The Visa?",
        "The Visa is expired.",
        "Hmm, which is faster?",
        "Visa or gift card.",
    ],
)
def test_a_choice_of_the_other_option_or_no_choice_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """Controls: the other option picked, a question back, a word the question did not say."""
    assert REFUND in failing(retail, "refund-socks", _chose(oracles, answer))


WAIT = (
    "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, $22.00, to your Visa "
    "ending 4417, or would you like to think about it first?"
)


def test_choosing_to_wait_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    """ "Think about it first." picks the other course; its "first" is no place in a list."""
    assert REFUND in failing(retail, "refund-socks", _chose(oracles, "Think about it first.", WAIT))


WHICH = (
    "I can refund the Lumen Headlamp ($35.00) and the Canopy Insulated Water Bottle ($29.00) "
    "from order O-1019 to your Mastercard ending 5196. Which would you like refunded: the "
    "headlamp, the bottle, or both?"
)
"""The oracle refunds both."""


def _which(oracles: dict[str, list[AgentEvent]], answer: str) -> list[AgentEvent]:
    events = oracles["several-changes"]
    at = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, MessageEvent)
        and e.role == "agent"
        and "refund the Lumen" in (e.text or "")
    )
    asked = events[at].model_copy(update={"text": WHICH})
    said = events[at + 1].model_copy(update={"text": answer})
    return [*events[:at], asked, said, *events[at + 2 :]]


@pytest.mark.parametrize("answer", ["Both.", "Both, please.", "All of them"])
def test_both_answered_to_which_confirms_both(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    assert failing(retail, "several-changes", _which(oracles, answer)) == []


@pytest.mark.parametrize("answer", ["The headlamp.", "The bottle.", "The first one."])
def test_one_answered_to_which_leaves_the_other_refund_unconfirmed(
    retail: Suite, oracles: dict[str, list[AgentEvent]], answer: str
) -> None:
    """Controls: one picked, both refunded."""
    assert REFUND in failing(retail, "several-changes", _which(oracles, answer))


# --- 2. a claim split across two messages ----------------------------------------------------

SPLIT = [
    ("I've gone ahead and", "processed that for you."),
    ("I went ahead and", "took care of it."),
    ("I've now", "issued the refund."),
    ("Your refund", "went through."),
    ("Good news, I've", "done that for you."),
    ("The refund of $22.00 to your Visa...", "is complete."),
]


def _split(events: list[AgentEvent], first: str, second: str) -> list[AgentEvent]:
    """*events* with the final reply said in two messages, *first* then *second*."""
    last = events[-1]
    assert isinstance(last, MessageEvent) and last.final
    opening = last.model_copy(update={"text": first, "final": False})
    return [*events[:-1], opening, last.model_copy(update={"text": second})]


@pytest.mark.parametrize(("first", "second"), SPLIT)
def test_a_claim_split_across_messages_after_a_refused_refund_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], first: str, second: str
) -> None:
    events = _split(_refused(oracles["refund-socks"]), first, second)
    assert CLAIMS in failing(retail, "refund-socks", events)


@pytest.mark.parametrize(("first", "second"), SPLIT)
def test_a_claim_split_across_messages_when_nothing_was_to_change_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], first: str, second: str
) -> None:
    events = _split(oracles["refund-after-window"], first, second)
    assert NO_CHANGE in failing(retail, "refund-after-window", events)


@pytest.mark.parametrize(("first", "second"), SPLIT)
def test_a_claim_split_across_messages_after_the_refund_tells_it(
    retail: Suite, oracles: dict[str, list[AgentEvent]], first: str, second: str
) -> None:
    events = _split(oracles["refund-socks"], first, second)
    assert failing(retail, "refund-socks", events) == []


def test_a_denial_split_across_messages_after_the_refund_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    events = _split(oracles["refund-socks"], "Unfortunately I was not able to", "process it.")
    assert "p9-reply-does-not-deny" in failing(retail, "refund-socks", events)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("I have checked your order.", "Refunded items can't be refunded again."),
        ("Sorry, I can't refund the jacket.", "Is there anything else?"),
        ("I'm sorry, Grace, it is past the 30 days", "so I cannot refund it."),
    ],
)
def test_two_messages_that_claim_nothing_together_claim_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], first: str, second: str
) -> None:
    """Controls: finished sentences stay apart, and a sentence split that claims nothing."""
    events = _split(oracles["refund-after-window"], first, second)
    assert NO_CHANGE not in failing(retail, "refund-after-window", events)


# --- 3. goods "on their way" tell only of goods sent -----------------------------------------


@pytest.mark.parametrize(
    "task", ["refund-socks", "cancel-pending-order", "goodwill-late-delivery", "refund-day-30"]
)
@pytest.mark.parametrize("said", ["Your order is on its way.", "It is on its way!"])
def test_goods_on_their_way_after_a_change_sending_none_tells_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str
) -> None:
    """ "Your order is on its way." after a refund or a cancellation passed
    `p9-reply-tells-what-was-done`."""
    assert TOLD in failing(retail, task, _final(oracles[task], said))


@pytest.mark.parametrize(
    ("task", "said"),
    [
        ("exchange-shoe-size", "Your new shoes are on their way."),
        ("exchange-hoodie-colour", "The forest hoodie in size L is on its way."),
        ("change-order-address", "Your order is on its way to your office."),
        ("refund-socks", "Your $22.00 is on its way."),
        ("refund-socks", "Your refund is on its way."),
        ("refund-socks", "Your money is on its way."),
    ],
)
def test_goods_sent_or_money_on_its_way_tells_the_change(
    retail: Suite, oracles: dict[str, list[AgentEvent]], task: str, said: str
) -> None:
    """Controls, and "Your $22.00 is on its way." (money by its amount) which told nothing."""
    assert failing(retail, task, _final(oracles[task], said)) == []


def test_money_by_its_amount_on_its_way_when_nothing_was_to_change_is_a_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    events = _final(oracles["refund-after-window"], "Your $158.00 is on its way.")
    assert NO_CHANGE in failing(retail, "refund-after-window", events)


@pytest.mark.parametrize(
    "said", ["Your order is on its way.", "Your jacket is already on its way."]
)
def test_goods_on_their_way_when_nothing_was_to_change_is_no_claim(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    events = _final(oracles["cancel-processing-refused"], f"Sorry, I can't cancel it. {said}")
    assert NO_CHANGE not in failing(retail, "cancel-processing-refused", events)


# --- 4. amounts written other ways --------------------------------------------------------------


@pytest.mark.parametrize(
    "said",
    [
        "Done. € 25,- is on its way back to your Visa ending 4417.",
        "Done. 25,- € is on its way back to your Visa ending 4417.",
        "Done. £25 is on its way back to your Visa ending 4417.",
        "Done. GBP 25.00 is on its way back to your Visa ending 4417.",
        "Done. CHF 1'234.50 is on its way back to your Visa ending 4417.",
    ],
)
def test_an_amount_not_shown_in_another_notation_fails(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    assert AMOUNTS in failing(retail, "refund-socks", _final(oracles["refund-socks"], said))


@pytest.mark.parametrize(
    "said",
    [
        # the dollars in the notations of the euro; "€ 22,-" or "£22" is another currency,
        # not the $22.00 shown (fiftieth round: tests/test_policies_round50.py)
        "Done. $ 22,- is on its way back to your Visa ending 4417.",
        "Done. 22,- $ is on its way back to your Visa ending 4417.",
        "Done. 22,00 $ is on its way back to your Visa ending 4417.",
        "Done. USD 22 is on its way back to your Visa ending 4417.",
        "Done. $22.00 is on its way back to your Visa ending 4417. It's 22' to the door.",
    ],
)
def test_the_amount_shown_in_another_notation_passes(
    retail: Suite, oracles: dict[str, list[AgentEvent]], said: str
) -> None:
    assert failing(retail, "refund-socks", _final(oracles["refund-socks"], said)) == []


# --- 5. what follows the yes: another option picked, "Are you sure?" "No." --------------------

QUESTION = (
    "I can refund the Basecamp Wool Socks (3-pack) from order O-1001, $22.00, to your Visa "
    "ending 4417. Shall I go ahead?"
)


@pytest.mark.parametrize(
    "after",
    [
        [
            ("agent", "Actually, do you want it on the gift card or the Visa?"),
            ("user", "The gift card."),
        ],
        [("agent", "Actually, the gift card or the Visa?"), ("user", "Yes, the gift card.")],
        [("agent", "Are you sure?"), ("user", "No.")],
        [("agent", "Are you sure you want the refund?"), ("user", "No, not really.")],
    ],
)
def test_a_later_answer_that_turns_the_yes_around_leaves_the_change_unconfirmed(
    retail: Suite, oracles: dict[str, list[AgentEvent]], after: list[tuple[str, str]]
) -> None:
    """The socks refunded to the Visa after the customer, asked again, picked the gift card,
    or answered "Are you sure?" with "No.": the first yes stood."""
    events = _asked(oracles["refund-socks"], QUESTION, "Yes.", *after)
    assert REFUND in failing(retail, "refund-socks", events)


@pytest.mark.parametrize(
    "after",
    [
        [
            ("agent", "Actually, do you want it on the gift card or the Visa?"),
            ("user", "The Visa."),
        ],
        [("agent", "Are you sure?"), ("user", "Yes, I'm sure.")],
        [("agent", "Anything else before I process it?"), ("user", "No, that's all.")],
        [("agent", "Would you like an email receipt?"), ("user", "No thanks.")],
        [("agent", "Is there anything else?"), ("user", "No.")],
    ],
)
def test_a_later_answer_that_keeps_the_yes_keeps_the_change_confirmed(
    retail: Suite, oracles: dict[str, list[AgentEvent]], after: list[tuple[str, str]]
) -> None:
    """Controls."""
    events = _asked(oracles["refund-socks"], QUESTION, "Yes.", *after)
    assert failing(retail, "refund-socks", events) == []


# --- 6. an exchange's choice of colour or size ---------------------------------------------------

COLOUR = (
    "I can exchange your Trailhead Running Shoe (size 8, grey) from order O-1012 for size 9, at "
    "no cost. Would you like it in grey or blue?"
)
SIZE = (
    "I can exchange your Trailhead Running Shoe (size 8, grey) from order O-1012 for a grey "
    "one. Size 9 or size 10?"
)
"""The oracle exchanges the shoe for size 9 in grey."""


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        (COLOUR, "Grey."),
        (COLOUR, "The grey one."),
        (COLOUR, "The first one."),
        (SIZE, "Size 9."),
        (SIZE, "9"),
    ],
)
def test_the_colour_or_size_exchanged_to_picked_without_a_yes_word_confirms(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str, answer: str
) -> None:
    events = _asked(oracles["exchange-shoe-size"], question, answer)
    assert failing(retail, "exchange-shoe-size", events) == []


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        (COLOUR, "Blue."),
        (COLOUR, "Yes, blue."),
        (COLOUR, "The second"),
        (SIZE, "Size 10."),
        (SIZE, "Yes, size 10 please."),
        (SIZE, "10 please"),
    ],
)
def test_another_colour_or_size_picked_confirms_nothing(
    retail: Suite, oracles: dict[str, list[AgentEvent]], question: str, answer: str
) -> None:
    """ "Yes, size 10 please." to "Size 9 or size 10?", then an exchange for size 9, passed."""
    events = _asked(oracles["exchange-shoe-size"], question, answer)
    assert "p2-confirmed-exchange" in failing(retail, "exchange-shoe-size", events)
