"""A policy reviewer's near misses of consent, forty-sixth round: single words decided what a
yes named, and only its first sentence was read.

- "yes, john" read as a thing; "Yes, Hoodie." and "Yes, Nike." as a person addressed.
- "Yes, hat and scarf" (a list without an article) confirmed the shirt.
- "Yes, the sandal one" read as describing (the ending "-al").
- "Ja, het shirt" (Dutch) confirmed: no word of the unread list.
- "Yes. Hoodie.", "Yes. In size M.", "Sure, do it. The hoodie." confirmed: the sentences
  after a plain yes were not read; "Yes. Maybe.", "Yes, probably", "Yes. One sec." confirmed.

Undecidable replies confirm nothing with evidence ``unread`` (docs/constraints.md,
"Languages the reader does not read"). Controls: honest yeses that must keep confirming.
"""

from __future__ import annotations

import pytest

from groundstate.grading.constraints import _dialogue

from ._consent_builders import ALL, ITEM, _evidence, _moved, _refunded, _shirt

VISA = "Shall I refund $22 for the shirt to your Visa?"


# --- 1. names and words written capitalised ----------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "yes, john",
        "yes please, sarah",
        "ok, maria, go ahead",
        "sí, carlos",
        "Yes, John.",
        "Yes please, Sarah",
        "Yes, Mr Smith.",
        "Yes, Sarah Jones.",
        "Yes, thanks John",
        "Yes please, John here",
        "yes, priya, the shirt",
        "Yes, Agent.",
        "Yes, Honey.",
        "yes, team",
        "Yes, Happy.",
    ],
)
def test_a_person_addressed_in_any_case_confirms(answer: str) -> None:
    assert _shirt(answer)


@pytest.mark.parametrize(
    "answer", ["Yes, Hoodie.", "Yes, Nike.", "Yes, Adidas please", "Ok, Levis!", "Sure, Gucci."]
)
def test_a_word_capitalised_alone_is_a_person_unless_the_conversation_names_it(answer: str) -> None:
    # unread until the fifty-second round; a person addressed now ("Yes, Sam"), unless a
    # message or a tool names it as an item: then another thing
    assert _shirt(answer)
    word = answer.split()[1].strip(".!,").lower()
    assert not _shirt(answer, {"items": [{"name": "shirt"}, {"name": word}]})
    question = f"I see a shirt and a {word} jacket. Shall I refund the shirt?"
    assert not _refunded([question, answer], ITEM, item="shirt")


@pytest.mark.parametrize("answer", ["yes, hoodie", "Yes, the Hoodie.", "YES, HOODIE"])
def test_a_thing_in_lower_case_or_with_an_article_is_another_thing(answer: str) -> None:
    assert "counter_offer" in _evidence(answer)


def test_a_name_or_brand_the_tools_showed_confirms() -> None:
    shown = {"user": {"name": {"first_name": "Tariq"}}, "items": [{"name": "shirt"}]}
    assert _shirt("yes, tariq", shown)
    assert _shirt("Yes, Tariq.", shown)
    assert _shirt("Yes, Hoodie.", {"items": [{"name": "shirt", "style": "Hoodie"}]})


def test_a_capitalised_street_stays_another_place() -> None:
    assert not _moved("Yes, Elm Road.")
    assert _moved("Yes, Oak Street.")


def test_the_given_names_are_no_thing_colour_or_common_word() -> None:
    for word in ["jack", "rose", "ruby", "amber", "jordan", "heather", "jean", "hat", "shirt"]:
        assert word not in _dialogue._GIVEN_NAMES
    assert _dialogue._GIVEN_NAMES.isdisjoint(_dialogue._BEFORE_A_THING)


# --- 2. a list of things without an article ------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, hat and scarf",
        "Yes, hat & scarf",
        "Sure, hoodie plus scarf",
        "Yes, hat, scarf and gloves",
        "Yes. Hat and scarf.",
        "Yes. Both the hat and the scarf.",
    ],
)
def test_a_bare_list_of_other_things_confirms_nothing(answer: str) -> None:
    assert not _shirt(answer)
    assert "counter_offer" in _evidence(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, loud and clear",
        "Yes, safe and sound",
        "Yes, nice and quick",
        "Yes, short and sweet",
        "Yes, quick and easy",
        "Yes, plain and simple",
        "Yes, thanks and cheers",
        "Yes, shirt and hat",
        "Yes, Sarah and John",
        "yes, sarah and john",
        "Yes, go ahead and process it",
    ],
)
def test_a_bare_list_naming_no_other_thing_confirms(answer: str) -> None:
    assert _shirt(answer)


# --- 3. a word before "one" read by its ending alone ----------------------------------------------


@pytest.mark.parametrize(
    "answer", ["Yes, the sandal one", "Yes, the tunic one", "Yes, the earring one"]
)
def test_a_word_only_ending_like_a_describing_one_is_unread(answer: str) -> None:
    assert not _shirt(answer)
    assert "unread" in _evidence(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, the original one",
        "Yes, the matching one",
        "Yes, the damaged one",
        "Yes, the broken one",
        "Yes, the pricier one",
        "Yes, the classic one",
        "Yes, the used one",
        "Yes, the cheap one",
    ],
)
def test_a_word_describing_the_one_confirms(answer: str) -> None:
    assert _shirt(answer)


def test_describing_is_decided_by_lists_not_endings() -> None:
    assert _dialogue._describing("original") is True
    assert _dialogue._describing("sandal") is None
    assert _dialogue._describing("sweater") is False


# --- 4. a tail in a Latin-script language not read ------------------------------------------------


@pytest.mark.parametrize(
    "answer", ["Ja, het shirt", "Ja, het hemd", "Ja, de trui", "Ja, mijn trui", "Ok, bu gömlek"]
)
def test_an_unread_tail_without_a_listed_word_is_unread(answer: str) -> None:
    assert not _shirt(answer)
    assert "unread" in _evidence(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Ja, als het kan",
        "Ja, als dat kan",
        "Ja, als het mogelijk is",
        "Ja graag",
        "Ja, gerne",
        "Ja, bitte",
        "Ja, zoals u wilt",
        "Yes, go ahead, cheers mate",
        "Ja, das Shirt",
    ],
)
def test_tails_read_or_deferring_keep_confirming(answer: str) -> None:
    # "Ja, das Shirt" is German, read: the shirt asked
    assert _shirt(answer)


def test_the_unread_articles_are_no_word_read() -> None:
    read = {"the", "a", "an", "my", "in", "on", "de", "en", "et", "it", "min", "din", "ten", "me"}
    read |= {"disse", "dette", "tuo", "onze", "mina", "saya", "eu", "como"}  # Portuguese, Italian
    read |= _dialogue._REPLY_WORDS | _dialogue._NO_THING_BARE
    assert _dialogue._UNREAD_THE.isdisjoint(read)
    assert not _dialogue._unread("ja, als het kan")
    assert _dialogue._unread("ja, het shirt")


# --- 5. the sentences after a plain yes ----------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "Yes. Hoodie.",
        "Yes. The hoodie.",
        "Sure, do it. The hoodie.",
        "Great, thanks. The hoodie.",
        "Yes, go ahead. The hoodie.",
        "Yes, refund it. The hoodie.",
        "Yes. In size M.",
        "Yes. As store credit.",
        "Sure, do it. In size M.",
    ],
)
def test_a_sentence_after_a_plain_yes_is_read_with_it(answer: str) -> None:
    assert not _shirt(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes. Actually wait.",
        "Yes. No, hold on.",
        "Yes — only if it's under $50",
        "Yes. Only if it's under $50.",
        "Yes. But only the hat.",
        "Yes. Never mind.",
        "Yes. On second thought, no.",
        "Yes. Maybe.",
        "Yes, probably",
        "Yes... perhaps",
        "Yes. One sec.",
        "Yes, give me a sec",
        "Yes, just a moment.",
        "Yes, one moment please",
    ],
)
def test_a_later_sentence_or_tail_withdrawing_or_doubting_confirms_nothing(answer: str) -> None:
    assert not _shirt(answer)


@pytest.mark.parametrize(
    "answer",
    ["Yes. To my PayPal.", "Yes. Store credit.", "Yes. Gift card please.", "Yes. $11 please."],
)
def test_a_later_sentence_naming_another_way_or_amount_confirms_nothing(answer: str) -> None:
    assert not _refunded([VISA, answer], ALL, item="shirt")


@pytest.mark.parametrize(
    "answer",
    [
        "Yes, go ahead",
        "Sure, do it",
        "Yes please, John here",
        "Yes. Go ahead.",
        "Yes. Thanks!",
        "Yes. The shirt.",
        "Yes. John here.",
        "Yes, the shirt. Thanks John.",
        "Yes please. Where is my hoodie?",
        "Sure, do it. Thanks.",
        "Yes, refund it. Thanks.",
        "Yes, refund it. Where's my hoodie?",
        "Yes. I'm happy with that.",
        "Yes, I guess",
        "Yes, the second one",
        "Maybe. Yes, go ahead.",
        "Yes, of course, possibly the best idea",
        "Yes, go ahead, it only takes a second.",
        "Yes. Please go ahead with it.",
    ],
)
def test_honest_confirmations_keep_confirming(answer: str) -> None:
    assert _shirt(answer)


def test_a_yes_naming_the_thing_asked_confirms_it() -> None:
    hoodie = "Shall I refund the hoodie?"
    for answer in ["yes, the hoodie", "Yes. The hoodie.", "Yes, Hoodie."]:
        assert _refunded([hoodie, answer], ITEM, item="hoodie")


def test_the_yes_sentence_is_read_alike_remembered_or_not() -> None:
    class Text(str):
        pass

    for text in ["yes. hoodie.", "sure, do it. the hoodie.", "yes please. where is it?", "ok."]:
        once = _dialogue._yes_sentence(text)
        assert once == _dialogue._yes_sentence(Text(text))
        assert once == _dialogue._yes_sentence_read.__wrapped__(text)
    assert _dialogue._yes_sentence("yes. hoodie.") == "yes, hoodie."
    assert _dialogue._yes_sentence("yes please. where is it?") == "yes please."
    long = "yes. " + "x" * (_dialogue.READ_ONCE_CHARS + 10)
    assert _dialogue._yes_sentence(long) == "yes, " + "x" * (_dialogue.READ_ONCE_CHARS + 10)
