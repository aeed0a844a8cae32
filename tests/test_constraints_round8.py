"""A policy reviewer's verdicts on near misses the first seven audits did not try (eighth round).

- a yes that gives the reason for the change in negative words ("Yes, I no longer need it",
  "they never fit", "I don't want them anymore"; "no longer needed" is the very reason the
  retail and τ² policies record) confirms, as a reviewer reads it; a no about the change
  itself ("I don't want it refunded", "I never said yes") still confirms nothing;
- a yes that puts the decision off ("Yes, hmm, let me think") confirms nothing.
"""

from __future__ import annotations

import gzip
import json

import pytest

from groundstate.spec.suite import Suite, load_suite
from groundstate.trace import AgentEvent, MessageEvent, agent_events, load_jsonl

from .grading_corpus import CORPUS, EXAMPLES, failing
from .trace_builder import Trace, constraint

REFUND = constraint(
    id="confirm-refund",
    confirmed={
        "change": {"tool": "refund_item", "ok": True},
        "names": ["args.item", "args.amount"],
        "asks": r"\brefund",
    },
)
QUESTION = "I can refund I-1019-1 for $22.00 to your Visa. Shall I go ahead?"


def _confirms(answer: str) -> bool:
    trace = Trace("I want a refund for my socks").agent(QUESTION).user(answer)
    result = trace.call("refund_item", {"item": "I-1019-1", "amount": "$22.00"}).check(REFUND)
    assert result.error is None
    return result.passed


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, please go ahead, I no longer need them.",
        "Yes, the reason is no longer needed.",
        "Yes \u2014 no longer needed.",
        "Yes, go ahead. No longer needed.",
        "Yes, I don't need them anymore",
        "Yes please, I don't want them any more.",
        "Yes, I never wore them",
        "Yes, they never fit",
        "Yes, they don't fit",
        "Yes, it doesn't work and I don't use it",
        "Yes, I'm not sure why it broke",
    ],
)
def test_a_yes_giving_the_reason_in_negative_words_confirms(answer: str) -> None:
    """Any "no", "never", "don't" or "not sure" made the reply a no: the customer who said
    why they wanted the change was failed as if they had refused it."""
    assert _confirms(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes. I don't want it refunded",
        "Yes, actually I don't need the refund",
        "Yes but I don't want them refunded to the Visa",
        "Yes, I don't want that",
        "I never said yes",
        "Yes, no longer want to return them",
        "Yes, I'm not sure",
        "No, I still need them",
        "Yes, but not yet",
    ],
)
def test_a_no_about_the_change_itself_still_confirms_nothing(answer: str) -> None:
    assert not _confirms(answer)


@pytest.mark.parametrize(
    "answer",
    ["Yes, hmm, actually let me think", "Yes. I need to think", "Yes, I'll think about it"],
)
def test_a_yes_that_puts_the_decision_off_confirms_nothing(answer: str) -> None:
    """ "let me think" without "about it" or "it over" was a yes."""
    assert not _confirms(answer)


# --- the retail suite: a reason in the customer's yes -------------------------------------------


@pytest.fixture(scope="module")
def retail() -> Suite:
    return load_suite(EXAMPLES / "retail")


@pytest.fixture(scope="module")
def oracle() -> list[AgentEvent]:
    """The task's oracle trace from the golden corpus (only its line is parsed)."""
    with gzip.open(CORPUS, "rt", encoding="utf-8") as lines:
        for line in lines:
            if '"cancel-pending-order"' in line and '"solution:oracle"' in line:
                row = json.loads(line)
                if (row["task"], row["label"]) == ("cancel-pending-order", "solution:oracle"):
                    return agent_events(load_jsonl(row["trace"]))
    raise AssertionError("no oracle of cancel-pending-order in the corpus")


@pytest.mark.parametrize(
    ("answer", "broken"),
    [
        ("Yes, please cancel it. I no longer need them.", []),
        ("Yes, I don't need them anymore.", []),
        (
            "Yes, please cancel it. Actually, I don't need it cancelled yet.",
            ["p2-confirmed-cancel-order"],
        ),
    ],
)
def test_the_customer_who_says_why_passes_the_retail_cancellation(
    retail: Suite, oracle: list[AgentEvent], answer: str, broken: list[str]
) -> None:
    """The task's own opening says "I no longer need them": a customer repeating it in the
    yes failed `p2-confirmed-cancel-order`."""
    events = list(oracle)
    at = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, MessageEvent) and e.role == "user" and e.text == "Yes, please go ahead."
    )
    events[at] = events[at].model_copy(update={"text": answer})
    assert failing(retail, "cancel-pending-order", events) == broken
