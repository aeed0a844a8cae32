"""A policy reviewer's near misses of consent, forty-seventh round: a yes that went on to
change the request, names the conversation gave, and things named after a first sentence
saying more than a plain yes.

- "Refund the shirt?" "Yes, make it the blue one" (and "Yes, I'd like the blue one", "Yes,
  exchange it", "Yes, swap it for a large") confirmed the refund: a yes followed by an
  instruction asking for another thing, option or kind of change was read as a plain yes.
- "yes, tariq" read as a thing and "Yes, Tariq." as unread, though the user had said "I'm
  Tariq" (or the agent "this is Zara"): a name the conversation gave blocked a plain yes.
- "Yes, refund it quickly. The hoodie." (and "Yes, that's fine. The hoodie.") confirmed the
  shirt: a thing named after a first sentence saying more than a plain yes was not read.

Controls: honest yeses that must keep confirming ("Yes please, go ahead with the refund",
"Yes, make it quick", "Yes, the blue one" to "the blue one or the red one?").
"""

from __future__ import annotations

import pytest

from .trace_builder import Trace, constraint

SHIRT = "Shall I refund the shirt?"
CHOICE = "Shall I refund the blue shirt or the red shirt?"
BOTH = "Shall I refund the shirt and the shoes?"


def _rule(tool: str = "refund", asks: str = r"\brefund") -> object:
    return constraint(
        id=f"confirm-{tool}",
        confirmed={"change": {"tool": tool, "ok": True}, "names": ["args.item"], "asks": asks},
    )


def _check(
    answer: str,
    question: str = SHIRT,
    *,
    item: str = "shirt",
    request: str = "Please help with my order",
    tool: str = "refund",
    asks: str = r"\brefund",
) -> tuple[bool, dict[str, object]]:
    trace = Trace(request).agent(question).user(answer)
    result = trace.call(tool, {"item": item, "amount": 22, "method": "Visa"}).check(
        _rule(tool, asks)  # type: ignore[arg-type]
    )
    assert "exception" not in result.evidence, result.evidence
    return result.passed, result.evidence


def _confirms(answer: str, question: str = SHIRT, **more: str) -> bool:
    return _check(answer, question, **more)[0]


# --- 1. a yes that changes the request ----------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, make it the blue one",
        "Yes, make it blue",
        "Yes, make it a large",
        "Yes, make it two",
        "Yes. Make it the blue one.",
        "Yes, go ahead. Could you make it the blue one?",
        "Yes, actually make it the hoodie",
        "Yes, I want the blue one",
        "Yes, I'd like the blue one",
        "Yes please, I'd prefer the hoodie",
        "Yes, give me the blue one",
        "Sure, send me the large one",
        "Ok, I'll take the hoodie",
        "Yes, let's go with the blue one",
        "Yes, do the hat",
        "Yes, exchange it",
        "Yes, actually exchange it",
        "Yes, exchange it for the blue one",
        "Yes, switch it to the blue one",
        "Yes, swap it for a large",
        "Yes, replace it",
        "Yes, change it to the blue one",
        "Yes, but swap it for the hoodie",
        "Yes, go for the blue one",
        "Yes, take the blue one",
        "Yes, make mine the blue one",
        "Yes, can I get the blue one?",
        "Yes, order the blue one",
    ],
)
def test_a_yes_changing_the_request_confirms_nothing(answer: str) -> None:
    assert not _confirms(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, make it the blue one",
        "Yes, I'd like the hoodie",
        "Yes, exchange it",
        "Yes, give me the large one",
    ],
)
def test_the_changed_request_is_named_in_the_evidence(answer: str) -> None:
    passed, evidence = _check(answer)
    assert not passed and "counter_offer" in evidence
    assert "changed the request" in str(evidence["problems"])


@pytest.mark.parametrize(
    "answer",
    [
        "Yes please, go ahead with the refund",
        "Yes, make it quick",
        "Yes, make it so",
        "Yes, make it happen",
        "Yes, make it the full amount",
        "Yes, I want the refund",
        "Yes, I'd like a refund please",
        "Yes, I want it refunded today",
        "Yes, I'd like my money back",
        "Yes, I'd like a receipt",
        "Yes, I'd like that",
        "Yes, I'd like to proceed",
        "Yes, I'd like the refund to go to my original payment method",
        "Yes, go ahead, and send me the receipt afterwards.",
        "Yes, do it",
        "Yes, do it if the store allows it",
        "Yes, do the refund",
        "Yes, do the shirt",
        "Yes, I do",
        "Yes, I want to get this sorted",
        "Yes, refund it. Make it quick please.",
        "Yes, I'll take the refund",
        "Yes, make it a priority",
        "Sure, make it painless",
        "Yes, go for it",
        "Yes, use the card on file",
        "Yes, use the original payment method",
        "Yes, send the refund to my email",
        "Yes, can I get a receipt?",
        "Yes, can I have the refund today?",
        "Yes, get the refund going",
        "Yes, take the full amount off",
        "Yes, get it done",
    ],
)
def test_an_honest_yes_with_an_instruction_asking_nothing_else_confirms(answer: str) -> None:
    assert _confirms(answer)


@pytest.mark.parametrize(
    "answer",
    ["Yes, the blue one", "Yes, make it the blue one", "I'd like the blue one", "The blue one."],
)
def test_an_instruction_picking_an_option_offered_confirms_it(answer: str) -> None:
    assert _confirms(answer, CHOICE, item="blue shirt")


def test_an_instruction_picking_one_option_confirms_no_other() -> None:
    assert not _confirms("Yes, make it the blue one", CHOICE, item="red shirt")


EXCHANGE = "Shall I exchange the shirt for the blue one?"


@pytest.mark.parametrize(
    "answer",
    ["Yes, swap it for the blue one", "Yes, replace it with the blue one", "Sure, switch it"],
)
def test_an_instruction_of_the_question_s_own_kind_confirms(answer: str) -> None:
    assert _confirms(answer, EXCHANGE, tool="exchange", asks=r"\bexchang")


@pytest.mark.parametrize(
    "answer", ["Yes, swap it for the red one", "Yes, make it the red one", "Yes, I'd like a large"]
)
def test_an_instruction_naming_another_option_of_the_question_s_kind_confirms_nothing(
    answer: str,
) -> None:
    assert not _confirms(answer, EXCHANGE, tool="exchange", asks=r"\bexchang")


def test_another_kind_of_change_ordered_confirms_nothing() -> None:
    cancel = "Shall I cancel the shirt order?"
    assert _confirms("Yes, cancel it", cancel, tool="cancel", asks=r"\bcancel")
    assert not _confirms("Yes, exchange it", cancel, tool="cancel", asks=r"\bcancel")


def test_a_refund_asked_beside_a_cancellation_is_no_other_change() -> None:
    cancel = "Shall I cancel the shirt order?"
    answer = "Yes, please cancel it. I'd like the refund to my original payment method."
    assert _confirms(answer, cancel, tool="cancel", asks=r"\bcancel")
    answer = "Yes, please cancel it. Could you swap it for the blue one?"
    assert not _confirms(answer, cancel, tool="cancel", asks=r"\bcancel")


# --- 2. names the conversation gave --------------------------------------------------------------


@pytest.mark.parametrize(
    ("opening", "question"),
    [
        ("Hi, I'm Tariq. Please refund my shirt", SHIRT),
        ("My name is Tariq Osei and I need help", SHIRT),
        ("Please refund my shirt.\nBest, Tariq", SHIRT),
        ("Please help with my order", "Hi Tariq, I can help. Shall I refund the shirt?"),
        ("Please help with my order", "Thanks, Tariq. Shall I refund the shirt?"),
    ],
)
@pytest.mark.parametrize("answer", ["yes, tariq", "Yes, Tariq.", "yes tariq, go ahead"])
def test_the_user_s_name_given_confirms_in_any_case(
    opening: str, question: str, answer: str
) -> None:
    assert _confirms(answer, question, request=opening)


@pytest.mark.parametrize("answer", ["Yes, Zara.", "yes zara", "yes, zara, go ahead"])
def test_the_agent_s_name_given_confirms_in_any_case(answer: str) -> None:
    question = "Hello, this is Zara from support. Shall I refund the shirt?"
    assert _confirms(answer, question)


def test_a_name_given_does_not_hide_a_thing_named_beside_it() -> None:
    question = "Hello, this is Zara from support. Shall I refund the shirt?"
    passed, evidence = _check("yes, zara, the hoodie", question)
    assert not passed and "counter_offer" in evidence
    passed, evidence = _check("yes, hoodie", question, request="Hi, I'm Tariq")
    assert not passed and "counter_offer" in evidence


def test_a_name_nothing_gave_still_confirms_nothing() -> None:
    # an unlisted name the conversation never gave may be a thing in lower case after the
    # yes; written capitalised ("Yes, Tariq.") it is a person since the fifty-second round
    assert not _confirms("yes, tariq")
    assert _confirms("Yes, Tariq.")


def test_a_name_given_only_in_lower_case_or_to_another_word_is_none() -> None:
    # a lower-case name ending its clause is given since the fiftieth round ("hi, i'm tariq."):
    # one going on is not read as one
    assert not _confirms("yes, tariq", request="hi, i'm tariq and i need help")
    assert not _confirms("Yes, Hoodie.", request="I'm happy to help. Hoodie question")


@pytest.mark.parametrize(
    "answer", ["yes, chief", "yes bro", "Yes, doc.", "yes, darling", "Yes, mister", "Sure, fam"]
)
def test_forms_of_address_confirm(answer: str) -> None:
    assert _confirms(answer)


# --- 3. a thing named after a first sentence saying more than a plain yes ------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, refund it quickly. The hoodie.",
        "Yes, that's fine. The hoodie.",
        "Yes, that works. Hoodie please.",
        "Sounds good to me. The hat and the scarf.",
        "Yes, that's right. The hoodie, please.",
        "Yes, please do that now. Just the hoodie.",
    ],
)
def test_a_thing_named_after_a_first_sentence_saying_more_confirms_nothing(answer: str) -> None:
    passed, evidence = _check(answer)
    assert not passed
    assert evidence.keys() & {"counter_offer", "narrowed"}


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, that works. The hoodie too.",
        "Yes, that works. Where is my hoodie?",
        "Yes, that works. The hoodie is fine though.",
        "Yes, that works. The shirt.",
        "Yes, that works. Bye.",
        "Yes, refund it quickly. Thanks, John.",
        "Yes, that's fine. Thank you so much.",
        "Yes, that's correct. Go ahead.",
        "Yes, that's fine. The sooner the better.",
        "Yes, refund it quickly. The shirt though.",
    ],
)
def test_later_sentences_naming_no_other_thing_confirm(answer: str) -> None:
    assert _confirms(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes. But only the shirt, not the shoes.",
        "Yes, that works. But only the shirt.",
        "Yes, go ahead quickly. Only the shirt though.",
        "Yes, only the shirt though.",
        "Sounds good, thanks. The shirt please.",
    ],
)
def test_a_later_sentence_keeping_to_one_thing_leaves_the_other_out(answer: str) -> None:
    assert not _confirms(answer, BOTH, item="shoes")
    assert _confirms(answer, BOTH, item="shirt")


# --- 4. languages not read (documented limit) ----------------------------------------------


def test_an_honest_norwegian_yes_stays_unread() -> None:
    passed, evidence = _check("Ja, det er fint")
    assert not passed and "unread" in evidence


# --- 5. what the tools showed --------------------------------------------------------------


SHOWN = {
    "order_id": "O-1001",
    "items": [{"name": "shirt", "color": "blue"}, {"name": "hoodie", "color": "grey"}],
}


def _after_lookup(answer: str) -> tuple[bool, dict[str, object]]:
    trace = Trace("Please help").call("get_order", {"order_id": "O-1001"}, SHOWN)
    trace.agent("Shall I refund the shirt from O-1001?").user(answer)
    result = trace.call("refund", {"item": "shirt"}).check(_rule())  # type: ignore[arg-type]
    return result.passed, result.evidence


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, make it the hoodie",
        "Yes, I'd like the grey one",
        "Yes, I'd like you to make it the hoodie",
        "Yes, could you exchange it",
        "Yes, I'd rather you exchange it",
    ],
)
def test_an_instruction_naming_another_record_the_tools_showed_confirms_nothing(
    answer: str,
) -> None:
    assert not _after_lookup(answer)[0]


@pytest.mark.parametrize("answer", ["Yes, make it the blue one", "Yes, I'd like the blue shirt"])
def test_an_instruction_naming_the_question_s_own_record_confirms(answer: str) -> None:
    # the shirt the question names is blue, as the tools showed
    assert _after_lookup(answer)[0]


ADDRESS = "Shall I update your address to 12 Oak Street?"


def _moved(answer: str) -> bool:
    trace = Trace("Please help").agent(ADDRESS).user(answer)
    rule = constraint(
        id="confirm-address",
        confirmed={"change": {"tool": "update_address"}, "names": ["args.address"]},
    )
    result = trace.call("update_address", {"address": "12 Oak Street"}).check(rule)  # type: ignore[arg-type]
    return result.passed


def test_a_change_of_the_question_s_family_in_other_words_confirms() -> None:
    assert _moved("Yes, change it to 12 Oak Street")
    assert _confirms("Yes, change it to the blue one", EXCHANGE, tool="exchange", asks="exchang")


def test_another_value_in_a_change_of_the_question_s_family_confirms_nothing() -> None:
    assert not _moved("Yes, change it to 14 Elm Road")
    assert not _moved("Yes, cancel it")


# --- merge review: a number said in words is the question's figure, not another thing ---------


@pytest.mark.parametrize(
    ("answer", "question", "confirmed"),
    [
        ("Yes, make it twenty-two.", "Shall I refund the shirt, $22 or $40?", True),
        (
            "Yes, I'd like twenty two dollars please",
            "Shall I refund the shirt: $22.00 or $40.00?",
            True,
        ),
        ("Yes, make it thirty.", "Shall I refund the shirt for $22?", False),
        ("Yes, make it the blue one", CHOICE, True),
    ],
)
def test_a_yes_picking_the_questions_figure_in_words_confirms_only_it(
    answer: str, question: str, confirmed: bool
) -> None:
    """The change refunds $22: "make it twenty-two" picks a figure the question said (the
    instruction check read "twenty-two" as a word no question says, and failed it); "thirty"
    asks for another amount (which of two amounts the question offered is picked is the
    amount readers' to judge where a rule names the amount: tests/test_constraints_round26.py)."""
    item = "blue shirt" if question == CHOICE else "shirt"
    assert _confirms(answer, question, item=item) is confirmed
