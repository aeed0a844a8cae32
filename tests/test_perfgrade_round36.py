"""The thirty-sixth round's grading shortcuts give the results of the straightforward
evaluation, never others.

- the ``confirmed`` walk's readings of a message's text alone (the retraction patterns:
  ``_retracts``, ``_takes_back``, ``_cancels_that``) are remembered per text
  (``_dialogue._read_once``): compared with the readings as they were written before, on
  every user message of the golden retail corpus against every agent message before it, on
  generated texts, on texts past the length remembered and on a ``str`` subclass;
- the whole evaluation of every declarative constraint and of ``confirming_questions`` on the
  golden corpus, the memo cold, then warm, against the memo off;
- a suite check looked up (``outcome.suite_function``) from the modules loaded with the suite
  without making its path, from the file when the suite has none, with the same errors.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundstate.errors import GraderError, SpecError
from groundstate.grading.constraints import _dialogue, confirming_questions, evaluate_constraints
from groundstate.grading.constraints._text import message_text, normalise, within_bound
from groundstate.grading.outcome import suite_function
from groundstate.spec.constraints import ConfirmedConstraint, PythonConstraint
from groundstate.spec.suite import load_suite
from groundstate.trace import AgentEvent, MessageEvent

from .grading_corpus import EXAMPLES, load_cases

# --- the readings as written before the memo (the reference) ------------------------------


def _old_cancels_that(event: AgentEvent, asked: MessageEvent) -> bool:
    if not isinstance(event, MessageEvent) or event.role != "user" or event.text is None:
        return False
    if _dialogue._CANCEL_THAT.search(message_text(event)) is None:
        return False
    return _dialogue._ABOUT_CANCELLING.search(message_text(asked)) is None


def _old_retracts(event: AgentEvent, asked: MessageEvent) -> bool:
    if not isinstance(event, MessageEvent) or event.role != "user" or event.text is None:
        return False
    text = _dialogue._without_side_matters(message_text(event))
    return (
        _dialogue._UNDOING.search(text) is not None
        or _dialogue._WITHDRAWING.search(text) is not None
        or _old_cancels_that(event, asked)
    )


def _old_takes_back(message: MessageEvent, asked: MessageEvent) -> bool:
    raw = _dialogue._without_side_matters(normalise(within_bound(message.text or "")))
    return (
        _dialogue._TAKING_BACK.search(_dialogue._without_side_matters(message_text(message)))
        is not None
        or _old_retracts(message, asked)
        or _dialogue._WITHDRAWING.search(raw) is not None
    )


def _readings(event: MessageEvent, asked: MessageEvent) -> tuple[bool, bool, bool]:
    return (
        _dialogue._retracts(event, asked),
        _dialogue._takes_back(event, asked),
        _dialogue._cancels_that(event, asked),
    )


def _old_readings(event: MessageEvent, asked: MessageEvent) -> tuple[bool, bool, bool]:
    return (
        _old_retracts(event, asked),
        _old_takes_back(event, asked),
        _old_cancels_that(event, asked),
    )


def _user(text: str) -> MessageEvent:
    return MessageEvent(step=1, at=0.1, role="user", text=text)


def _agent(text: str) -> MessageEvent:
    return MessageEvent(step=0, at=0.0, role="agent", text=text)


_ASKED = [
    _agent("Shall I cancel order O-1001 for you?"),
    _agent("I can refund the socks ($12.00) to your Visa. Shall I go ahead?"),
    _agent("Done. Anything else?"),
]


def test_every_corpus_message_reads_as_before() -> None:
    """Every user message of the corpus, against every agent message before it (and a few
    others), twice (the second from the memo): each reading as the old code gave it."""
    cases = load_cases()
    pairs = 0
    retractions = 0
    for case in cases:
        asked = list(_ASKED)
        for event in case.events:
            if not isinstance(event, MessageEvent):
                continue
            if event.role == "agent":
                asked.append(event)
                continue
            for question in asked[-4:]:
                expected = _old_readings(event, question)
                assert _readings(event, question) == expected, (event.text, question.text)
                assert _readings(event, question) == expected
                pairs += 1
                retractions += any(expected)
    assert pairs > 500
    assert retractions > 20  # the corpus's second thoughts are in it, not only plain yeses


_WORDS = [
    "yes", "no", "cancel", "cancel that", "cancel it", "undo", "wait", "i meant no",
    "oops", "go ahead", "the refund", "stop", "don't", "keep", "the socks", "ignore that",
    "wrong chat", "actually", "please", "cancelar", "annulez", "hold off on", "no receipt",
    ",", ".", "!", "?", "¡", "I'll keep them", "never mind the email", "but", "and",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=8), st.sampled_from(_ASKED))
def test_generated_replies_read_as_before(words: list[str], asked: MessageEvent) -> None:
    event = _user(" ".join(words))
    assert _readings(event, asked) == _old_readings(event, asked)
    assert _readings(event, asked) == _old_readings(event, asked)


def test_the_memo_answers_for_the_reading_it_was_made_by() -> None:
    """One text, two readings: each its own answer (the reading is part of the key), and
    one answer per text."""
    assert _dialogue._read_once(_dialogue._says_cancel_that, "cancel that") is True
    assert _dialogue._read_once(_dialogue._undoes, "cancel that") is False
    assert _dialogue._read_once(_dialogue._says_cancel_that, "keep that") is False


def test_long_texts_are_kept_apart_and_str_subclasses_read_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the length remembered, a text's reading is kept in a small memo of its own (a
    long reply is read again for each of its clauses: fiftieth round), not in the memo of
    short texts; a str subclass (whose methods may answer otherwise from one call to the
    next) is read each time and nothing is kept."""
    calls: list[str] = []

    def reading(text: str) -> bool:
        calls.append(text)
        return "x" in text

    monkeypatch.setattr(_dialogue, "READ_ONCE_CHARS", 5)
    before = _dialogue._read_remembered.cache_info().currsize
    assert _dialogue._read_once(reading, "abcdefx") is True
    assert _dialogue._read_once(reading, "abcdefx") is True
    assert len(calls) == 1
    assert _dialogue._read_remembered.cache_info().currsize == before

    class Shifty(str):
        pass

    assert _dialogue._read_once(reading, Shifty("x")) is True
    assert _dialogue._read_once(reading, Shifty("x")) is True
    assert len(calls) == 3
    assert _dialogue._read_remembered.cache_info().currsize == before
    assert _dialogue._read_once(reading, "ab") is False  # short: remembered
    assert _dialogue._read_once(reading, "ab") is False
    assert len(calls) == 4
    for n in range(40):  # the long texts' memo is bounded
        _dialogue._read_once(reading, f"abcdef{n}")
    assert _dialogue._read_long.cache_info().currsize <= 16


def test_a_long_retraction_is_still_found() -> None:
    """A retraction in a message longer than the memo keeps: read, not skipped."""
    event = _user("Wait, " + "really " * 800 + "I take it back.")
    assert len(event.text or "") > _dialogue.READ_ONCE_CHARS
    assert _readings(event, _ASKED[0]) == _old_readings(event, _ASKED[0])
    assert _dialogue._takes_back(event, _ASKED[0]) is True


def test_no_answer_can_be_written_into_the_memo() -> None:
    """The memo is an lru_cache keyed by the reading function itself: an agent's code that
    calls it with a reading of its own ("nothing retracts") makes an entry for that function
    only; the harness's readings still find the retraction."""
    event = _user("Actually, cancel that.")

    def nothing(text: str) -> bool:
        return False

    for text in ("cancel that", message_text(event)):
        _dialogue._read_remembered(nothing, text)
    assert not [
        name
        for name, value in vars(_dialogue).items()
        if isinstance(value, dict) and "read" in name.lower()
    ]
    assert _dialogue._retracts(event, _ASKED[1]) is True
    assert _dialogue._retracts(event, _ASKED[0]) is False  # to a cancellation, it orders it


def test_the_memo_is_bounded() -> None:
    for n in range(5000):
        assert _dialogue._read_once(_dialogue._says_cancel_that, f"cancel {n}") is False
    assert _dialogue._read_remembered.cache_info().currsize <= 4096
    assert _dialogue._read_once(_dialogue._says_cancel_that, message_text(_user("Cancel."))) is True


# --- the whole evaluation, on the golden corpus -------------------------------------------


def test_the_corpus_grades_alike_with_and_without_the_memo(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every declarative constraint of every corpus case, and what ``confirming_questions``
    finds for every ``confirmed`` rule: the memo cold, warm, and off, alike (the verdicts
    the corpus pins: tests/test_grading_equivalence.py)."""
    retail = load_suite(EXAMPLES / "retail")
    cases = load_cases()

    def results(clear: bool) -> list[Any]:
        if clear:
            _dialogue._read_remembered.cache_clear()
        out: list[Any] = []
        for case in cases:
            rules = [
                r
                for r in retail.tasks[case.task_id].hard_process_constraints
                if not isinstance(r, PythonConstraint)
            ]
            graded = evaluate_constraints(rules, list(case.events))
            out.append([r.model_dump_json() for r in graded])
            for rule in rules:
                if isinstance(rule, ConfirmedConstraint):
                    found = confirming_questions(rule.confirmed, case.events)
                    out.append({i: q.model_dump_json() for i, q in found.items()})
        return out

    cold = results(clear=True)
    hits = _dialogue._read_remembered.cache_info().hits
    warm = results(clear=False)
    assert _dialogue._read_remembered.cache_info().hits > hits
    with monkeypatch.context() as patched:
        patched.setattr(_dialogue, "_read_once", lambda reading, text: reading(text))
        off = results(clear=True)
    assert cold == off
    assert warm == off
    verdicts = [row for row in off if isinstance(row, list)]
    assert sum('"passed":false' in r for row in verdicts for r in row) > 50
    assert any(isinstance(row, dict) and row for row in off)  # questions found, not only none


# --- a suite check looked up -----------------------------------------------------------


def test_a_check_of_the_loaded_suite_is_found_without_its_file(tmp_path: Path) -> None:
    """The modules loaded with the suite answer, whatever the folder holds now (nothing
    here); a function they do not have is the grader error it was."""
    retail = load_suite(EXAMPLES / "retail")
    missing = tmp_path / "gone"
    found = suite_function("checks.py:no_card_details", missing, retail.checks)
    assert found is retail.checks["checks.py"].no_card_details
    with pytest.raises(GraderError, match=re.escape("checks.py has no function 'nothing_here'")):
        suite_function("checks.py:nothing_here", missing, retail.checks)


def test_a_check_outside_the_loaded_modules_is_read_from_its_file(tmp_path: Path) -> None:
    (tmp_path / "more.py").write_text("def f(trace, s0):\n    return True\n")
    retail = load_suite(EXAMPLES / "retail")
    for checks in (retail.checks, {}, None):
        assert suite_function("more.py:f", tmp_path, checks)([], None) is True
    with pytest.raises(SpecError, match=re.escape("absent.py")):  # the loader's, as before
        suite_function("absent.py:f", tmp_path, retail.checks)
