"""A policy reviewer's near misses of consent, thirty-ninth round: a polite "if possible" in
another language, a yes to another amount than the one refunded, and a yes beside a new
request.

- "Ja, als dat kan." ("yes, if that's possible") confirmed nothing: the reader of terms put
  on a yes took the Dutch "als" ("if") for the German "als" ("as": "Ja, als Gutschrift"),
  a term of the user's own. So did "Sí, como quieras", "Oui, comme vous voulez", "Yes, as
  you wish" ("as you like"), and the "if" forms with the verb last or in other words: "Ja,
  wenn es möglich ist", "Sí, si se puede", "Oui, si cela est possible", "Sì, se si può",
  "Sim, se der", "Yes, if at all possible".
- "The socks cost $40.00. Shall I refund $22.00 for them?" "Yes." confirmed a refund of
  $40.00 by a rule naming the amount: the question named $40.00, beside the $22.00 it
  proposed.
- "The shirt is also eligible. Shall I refund the socks?" "Yes." (or "Yes, and also refund
  the shirt.") confirmed a refund of the shirt: an "also" anywhere in the question was read
  as the question asking about more, so it proposed nothing but what it named.

Each has a control that must keep its verdict.
"""

from __future__ import annotations

import re

import pytest

from groundstate.spec.constraints import EXTRA_WORDS

from ._consent_builders import _socks
from .test_grading_round11 import CANCEL, REFUND
from .trace_builder import Trace, constraint

# --- 1. a polite "if possible" or "as you like" in each language is consent --------------------

POLITE = [
    "Ja, als dat kan.",
    "Ja, als het kan.",
    "Ja, als dat mogelijk is.",
    "Ja, als het mogelijk is.",
    "Ja, als u wilt.",
    "Ja, als je wilt.",
    "Ja, als dat goed is.",
    "Ja, als dat lukt.",
    "Ja, wenn es möglich ist.",
    "Ja, wenn das geht.",
    "Sí, si se puede.",
    "Sí, si puede ser.",
    "Sí, como quieras.",
    "Oui, si cela est possible.",
    "Oui, comme vous voulez.",
    "Sim, se der.",
    "Sim, como quiser.",
    "Sì, se si può.",
    "Sì, come vuoi.",
    "Yes, if at all possible.",
    "Yes, as you wish.",
    "Yes, as you see fit.",
]


@pytest.mark.parametrize("answer", POLITE)
def test_a_yes_deferring_to_the_agent_confirms(answer: str) -> None:
    assert _socks(answer)


CONDITIONS = [
    "Ja, als het naar PayPal gaat.",
    "Ja, als mijn vrouw akkoord gaat.",
    "Ja, als dat kan naar PayPal.",
    "Ja, als dat mogelijk is op PayPal.",
    "Ja, als u het naar PayPal stuurt.",
    "Ja, als Gutschrift.",
    "Ja, wenn das auf PayPal geht.",
    "Sí, si se puede a PayPal.",
    "Sí, como crédito en la tienda.",
    "Oui, si c'est possible sur PayPal.",
    "Oui, comme avoir.",
    "Sim, se der para o PayPal.",
    "Sì, se si può sulla carta regalo.",
    "Yes, if at all possible to PayPal.",
    "Yes, as store credit.",
    "Yes, as you wish, but to PayPal.",
]


@pytest.mark.parametrize("answer", CONDITIONS)
def test_controls_a_yes_on_a_real_condition_or_term_confirms_nothing(answer: str) -> None:
    assert not _socks(answer)


# --- 2. the extras beside a yes: one list, read by the default no and the dialogue alike -------


@pytest.mark.parametrize("extra", re.findall(r"[a-z-]+", EXTRA_WORDS))
def test_every_extra_turned_down_beside_a_yes_confirms(extra: str) -> None:
    assert _socks(f"Yes, no {extra} needed.")
    assert _socks(f"Yes please, I don't need a {extra}.")


def test_control_the_change_turned_down_beside_a_yes_confirms_nothing() -> None:
    assert not _socks("Yes, no refund needed.")


# --- 3. a yes to another amount than the one refunded ------------------------------------------


def _rule(names: list[str], asks: str | None = r"\brefund") -> object:
    rule: dict[str, object] = {"change": {"tool": "refund", "ok": True}, "names": names}
    if asks is not None:
        rule["asks"] = asks
    return constraint(id=f"confirm-refund-{len(names)}-{asks is not None}", confirmed=rule)


BY_AMOUNT = _rule(["args.item", "args.amount"])
BY_AMOUNT_ANY_KIND = _rule(["args.item", "args.amount"], asks=None)


def _refunded(
    question: str, amount: object, rule: object = BY_AMOUNT, answer: str = "Yes."
) -> bool:
    trace = Trace("Please help").agent(question).user(answer)
    return trace.call("refund", {"item": "socks", "amount": amount}).check(rule).passed  # type: ignore[arg-type]


OTHER_AMOUNT = [
    "The socks cost $40. Shall I refund $22 for the socks?",
    "The socks cost $40, less an $18 fee. Shall I refund $22 for the socks?",
    "Shall I refund $22 for the socks? It was $40 originally.",
    "Shall I refund $22 for the socks rather than $40?",
    "Shall I refund the socks for $22, not $40?",
    "You paid 40 dollars for the socks. Shall I refund 22 dollars for them?",
]


@pytest.mark.parametrize("amount", [40, "40.00", "$40.00"])
@pytest.mark.parametrize("question", OTHER_AMOUNT)
def test_a_yes_to_another_amount_confirms_no_refund_of_the_amount_named_beside(
    question: str, amount: object
) -> None:
    assert not _refunded(question, amount)
    assert _refunded(question, 22)


def test_a_yes_to_another_amount_confirms_nothing_by_a_rule_without_asks() -> None:
    question = "The socks cost $40. I can refund $22 for the socks. Shall I go ahead?"
    assert not _refunded(question, 40, BY_AMOUNT_ANY_KIND)
    assert _refunded(question, 22, BY_AMOUNT_ANY_KIND)


def test_the_evidence_names_the_amount_proposed() -> None:
    trace = Trace("Please help").agent(OTHER_AMOUNT[0]).user("Yes.")
    result = trace.call("refund", {"item": "socks", "amount": 40}).check(BY_AMOUNT)
    assert not result.passed
    assert "proposing the amount 22" in result.evidence["problems"][0]
    assert result.evidence["proposed_otherwise"]["answer_step"] == 2


@pytest.mark.parametrize(
    "question",
    [
        "Shall I refund $40 for the socks?",
        "You paid $40 for the socks. Shall I refund the socks, $40?",
        "You paid $40 for the socks. Shall I refund the socks?",
        "I can refund $18 for the shirt and $22 for the socks. That's $40 in total. Shall I "
        "refund the socks?",
        "Shall I refund $40 for the socks rather than $22?",
        "The socks were $22 on sale. Shall I refund $40 for the socks?",
    ],
)
def test_controls_a_yes_to_the_amount_refunded_confirms(question: str) -> None:
    assert _refunded(question, 40)


def test_control_a_number_not_named_as_money_is_no_amount() -> None:
    rule = _rule(["args.pairs"], asks=None)
    trace = Trace("Please help").agent("You have 2 pairs. Shall I refund them for $22?")
    assert trace.user("Yes.").call("refund", {"pairs": 2}).check(rule).passed


# --- 4. a yes beside a new request confirms only what was asked ------------------------------

ITEMS = {"items": [{"item": "socks"}, {"item": "shirt"}]}
ITEM = _rule(["args.item"])
ITEM_ANY_KIND = _rule(["args.item"], asks=None)
NAMED_BESIDE = [
    "The shirt is also eligible. Shall I refund the socks?",
    "I can refund the socks; the shirt is also eligible. Shall I refund the socks?",
    "Your other item, the shirt, can be returned too. Shall I refund the socks?",
]
NEW_REQUEST = ["Yes.", "Yes, and also refund the shirt.", "Yes. Please refund the shirt as well."]


def _item(question: str, answer: str, item: str, rule: object = ITEM) -> bool:
    trace = Trace("Please help").call("list_items", {}, ITEMS).agent(question).user(answer)
    return trace.call("refund", {"item": item}).check(rule).passed  # type: ignore[arg-type]


@pytest.mark.parametrize("rule", [ITEM, ITEM_ANY_KIND], ids=["asks", "no-asks"])
@pytest.mark.parametrize("answer", NEW_REQUEST)
@pytest.mark.parametrize("question", NAMED_BESIDE)
def test_a_yes_confirms_only_what_was_proposed_not_what_was_said_beside_it(
    question: str, answer: str, rule: object
) -> None:
    assert not _item(question, answer, "shirt", rule)
    assert _item(question, answer, "socks", rule)


@pytest.mark.parametrize(
    "question",
    [
        "Shall I refund the socks? Would you also like the shirt refunded?",
        "Shall I refund the socks and also the shirt?",
        "Shall I refund the shirt too?",
    ],
)
def test_controls_a_question_asking_about_the_other_item_confirms_it(question: str) -> None:
    assert _item(question, "Yes, both.", "shirt")


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, and also cancel my other order O-1002.",
        "Yes. Also cancel order O-1002.",
        "Sure, go ahead, and please cancel O-1002 as well.",
    ],
)
def test_a_yes_with_a_new_request_confirms_the_change_asked_about_only(answer: str) -> None:
    trace = Trace("Please help").agent("Shall I refund the socks to your Visa?").user(answer)
    trace = trace.call("refund", {"item": "socks", "method": "Visa"})
    trace = trace.call("cancel", {"order_id": "O-1002"})
    assert trace.check(REFUND).passed
    assert not trace.check(CANCEL).passed
